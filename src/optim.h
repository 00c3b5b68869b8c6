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
	/* Runs of [0, P) alike in weight decay (optim_set_decay): one call of
	 * the update each; NULL (one call over all, decayed) until it is
	 * called, or where every value is alike (no decay, or on all). */
	int n_runs;
	struct optim_run {
		size_t at, len;
		int decay;
	} *runs;
};

/* Allocates the slots the optimizer of cfg needs for n parameters. */
void optim_init(struct optim *o, const struct backend *be, const struct config *cfg, size_t n);
void optim_free(struct optim *o);
/* Weight decay (the optimizer's, its hyper-parameter) on the variables
 * of reg that on says (enum decay_kind), of which this optimizer updates
 * the values [first, first + P) (its shard): the runs of them alike. */
struct params;
void optim_set_decay(struct optim *o, const struct params *reg, size_t first, int on);
/* Learning rate for the step that makes global_step = step + 1. */
float optim_lr(const struct config *cfg, long step, long total_steps);
/* One update of w (P) from g (P) as step number t (1-based) with rate lr. */
void optim_step(struct optim *o, float *w, const float *g, long t, float lr);
/* The slots (buffers of P) the optimizer of cfg keeps, e.g. 2 for Adam. */
int optim_slots(const struct config *cfg);
/* The weight decay cfg asks for, with the optimizer's default resolved
 * (optim_init resolves --beta1 and --beta2 the same way). */
float optim_weight_decay(const struct config *cfg);
