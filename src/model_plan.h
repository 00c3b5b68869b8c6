/* The parts of model_plan (model.h) that follow the layers' shapes and
 * variables: model.c's, not the trainer's. */
#ifndef MTRAIN_MODEL_PLAN_H
#define MTRAIN_MODEL_PLAN_H

#include "model.h"

/* Each unembed given the first embedding's table as its variable (tied
 * embeddings): 0, or -1 with a user_error when there is none or its width
 * is another. */
int model_plan_tied(struct model *m, int n);
/* Which layers run backward, which of their inputs get a gradient, which
 * of those add to one a later layer gave (layer.backward, needs_dx,
 * accumulate), and which fused activations run their backward in the
 * layer before (act_back, fused_back). */
void model_plan_grads(struct model *m, int n);
/* The arena: every output and gradient a span of the walk's steps, placed
 * so that buffers alive at once never overlap (m->y_at, dy_at, arena_per_row,
 * unplanned_per_row), and evaluation's forward-only plan (y_eval_at,
 * eval_per_row). */
void model_plan_arena(struct model *m, int n);

#endif
