/* Optimizers (kinds.h's OPTIM_KINDS: sgd, momentum, adam, ...) over the flat
 * parameter buffer, and the learning-rate schedule (linear warm-up, then
 * constant, cosine or step). Slots share the parameter layout and carry TF
 * names, e.g. "<var>/Adam" (first moment), "<var>/Adam_1" (second moment). */
#pragma once
#include "backend.h"
#include "config.h"

struct optim {
	const struct backend *be;
	struct optim_hp hp;    /* lr and bias corrections refreshed every step */
	int n_slots;           /* 0, 1 or 2 */
	const char *slot_suffix[2]; /* e.g. "Adam", "Adam_1" */
	float *slot[2];        /* (P) each, backend memory, NULL when unused */
	size_t n;              /* P */
};

/* Allocates the slots the optimizer of cfg needs for n parameters. */
void optim_init(struct optim *o, const struct backend *be, const struct config *cfg, size_t n);
void optim_free(struct optim *o);
/* Learning rate for the step that makes global_step = step + 1. */
float optim_lr(const struct config *cfg, long step, long total_steps);
/* One update of w (P) from g (P) as step number t (1-based) with rate lr. */
void optim_step(struct optim *o, float *w, const float *g, long t, float lr);
/* The slots (buffers of P) the optimizer of cfg keeps, e.g. 2 for Adam. */
int optim_slots(const struct config *cfg);
/* The weight decay cfg asks for, with the optimizer's default resolved
 * (optim_init resolves --beta1 and --beta2 the same way). */
float optim_weight_decay(const struct config *cfg);
