/* Optimizers and the learning-rate schedule of optim.h. The per-element
 * formulas are in mathfn.h, shared with the CUDA kernels. */
#include "optim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* The OPTIM_KINDS table: slots and their names (the defaults are kinds.c's
 * optim_defaults). */
static const struct optim_info {
	int n_slots;
	const char *slot_suffix[2];
} optim_info[] = {
#define OPTIM_INFO(id, name, slots, s1, s2, ...) [id] = {slots, {s1, s2}},
	OPTIM_KINDS(OPTIM_INFO)
#undef OPTIM_INFO
};

int optim_slots(const struct config *cfg) { return optim_info[cfg->optim].n_slots; }

/* value as set, or the optimizer's default for hyper-parameter which when
 * it was left 'default' (stored as -1). */
static float value_or_default(float value, const struct config *cfg, enum optim_hp_id which)
{
	return value >= 0.0f ? value : optim_defaults[cfg->optim][which];
}

float optim_weight_decay(const struct config *cfg)
{
	return value_or_default(cfg->weight_decay, cfg, OPTIM_HP_WEIGHT_DECAY);
}

void optim_init(struct optim *o, const struct backend *be, const struct config *cfg, size_t n)
{
	memset(o, 0, sizeof(*o));
	o->be = be;
	o->n = n;
	o->hp.kind = (enum optim_kind)cfg->optim;
	o->hp.momentum = cfg->momentum;
	o->hp.nesterov = cfg->nesterov;
	o->hp.beta1 = value_or_default(cfg->beta1, cfg, OPTIM_HP_BETA1);
	o->hp.beta2 = value_or_default(cfg->beta2, cfg, OPTIM_HP_BETA2);
	o->hp.eps = cfg->eps;
	o->hp.weight_decay = optim_weight_decay(cfg);
	const struct optim_info *info = &optim_info[cfg->optim];
	o->n_slots = info->n_slots;
	for (int i = 0; i < o->n_slots; i++)
		o->slot_suffix[i] = info->slot_suffix[i];
	size_t bytes = n * sizeof(float);
	for (int i = 0; i < o->n_slots; i++)
		o->slot[i] = be->alloc(be, bytes);
	/* For tests (tests/mpi/zero.sh): each rank says what it allocated, so
	 * ZeRO-1's 1/N is checked on the allocation, not on the figure the
	 * start line computes from the plan. */
	if (getenv("MTRAIN_TEST_OPTIM_BYTES")) {
		printf("optimizer slots: rank %d allocated %zu bytes\n", log_rank(),
		       (size_t)o->n_slots * bytes);
		fflush(stdout);
	}
}

void optim_free(struct optim *o)
{
	if (!o->be)
		return;
	for (int i = 0; i < 2; i++)
		o->be->free(o->be, o->slot[i]);
	memset(o, 0, sizeof(*o));
}

float optim_lr(const struct config *cfg, long step, long total_steps)
{
	double lr = cfg->lr;
	if (step < cfg->warmup)
		return (float)(lr * (double)(step + 1) / (double)cfg->warmup);
	long after = step - cfg->warmup, span = total_steps - cfg->warmup;
	switch (cfg->schedule) {
	case SCHED_COSINE:
		if (span <= 0)
			return cfg->lr;
		return (float)(cfg->lr_min + 0.5 * (lr - cfg->lr_min) *
				       (1.0 + cos(M_PI * (double)after / (double)span)));
	case SCHED_STEP:
		return (float)(lr * pow(cfg->lr_gamma, (double)(after / cfg->lr_step_every)));
	default:
		return cfg->lr;
	}
}

void optim_step(struct optim *o, float *w, const float *g, long t, float lr)
{
	o->hp.lr = lr;
	o->hp.bc1 = 1.0f - powf(o->hp.beta1, (float)t);
	o->hp.bc2 = 1.0f - powf(o->hp.beta2, (float)t);
	o->be->optim_update(o->be, w, g, o->slot[0], o->slot[1], o->n, &o->hp);
}
