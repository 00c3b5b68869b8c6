/* Optimizers and the learning-rate schedule of optim.h. The per-element
 * formulas are in mathfn.h, shared with the CUDA kernels. */
#include "optim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "log.h"
#include "params.h"

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
	free(o->runs);
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

/* Whether --weight-decay-on matrices decays the variable called name: a
 * kernel or an embedding table, by its last part. */
static int is_matrix(const char *name)
{
	const char *last = strrchr(name, '/');
	last = last ? last + 1 : name;
	return !strcmp(last, "kernel") || !strcmp(last, "embeddings");
}

void optim_set_decay(struct optim *o, const struct params *reg, size_t first, int on)
{
	free(o->runs);
	o->runs = NULL;
	o->n_runs = 0;
	if (on == DECAY_ALL || o->hp.weight_decay == 0.0f)
		return; /* alike everywhere: one call a step */
	o->runs = xcalloc(2 * (size_t)reg->n + 1, sizeof(*o->runs));
	for (size_t at = 0; at < o->n;) {
		/* The variable holding first + at, or the gap before the next
		 * (offsets are aligned: params.h), which goes with the run
		 * before it (its values are 0 either way). */
		size_t v = first + at, end = first + o->n;
		int decay = o->n_runs ? o->runs[o->n_runs - 1].decay : 1;
		for (int i = 0; i < reg->n; i++) {
			const struct param *p = &reg->p[i];
			size_t stop = p->offset + p->size;
			if (v >= p->offset && v < stop)
				decay = on == DECAY_ALL || is_matrix(p->name);
			if (v >= p->offset && v < stop && stop < end)
				end = stop;
			else if (p->offset > v && p->offset < end)
				end = p->offset;
		}
		struct optim_run *r = &o->runs[o->n_runs - (o->n_runs > 0)];
		if (o->n_runs && r->decay == decay)
			r->len += end - v;
		else
			o->runs[o->n_runs++] = (struct optim_run){at, end - v, decay};
		at = end - first;
	}
}

void optim_step(struct optim *o, float *w, const float *g, long t, float lr)
{
	o->hp.lr = lr;
	o->hp.bc1 = 1.0f - powf(o->hp.beta1, (float)t);
	o->hp.bc2 = 1.0f - powf(o->hp.beta2, (float)t);
	if (!o->runs) {
		o->be->optim_update(o->be, w, g, o->slot[0], o->slot[1], o->n, &o->hp);
		return;
	}
	struct optim_hp hp = o->hp;
	for (int i = 0; i < o->n_runs; i++) {
		const struct optim_run *r = &o->runs[i];
		hp.weight_decay = r->decay ? o->hp.weight_decay : 0.0f;
		o->be->optim_update(o->be, w + r->at, g + r->at, o->slot[0] ? o->slot[0] + r->at : NULL,
				    o->slot[1] ? o->slot[1] + r->at : NULL, r->len, &hp);
	}
}
