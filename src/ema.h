/* The EMA registry. Rank 0 owns the canonical exponential moving average of
 * every trainable variable, one shadow each, named
 * "<var>/ExponentialMovingAverage" and laid out like the parameters. Other
 * ranks hold a copy that is current only after ema_sync. The decay follows
 * TF's num_updates rule, driven by the one global step. */
#pragma once
#include "backend.h"
#include "comm.h"

#define EMA_SUFFIX "ExponentialMovingAverage"

struct ema {
	const struct backend *be;
	float *shadow;   /* (P) backend memory */
	size_t n;        /* P */
	float decay;     /* e.g. 0.999 */
	int num_updates; /* 1: decay = min(decay, (1 + t) / (10 + t)) */
	int owner;       /* 1 on rank 0, which alone updates */
};

/* Allocates the shadows and sets them to w (P). owner: this rank updates. */
void ema_init(struct ema *e, const struct backend *be, const float *w, size_t n,
	      float decay, int num_updates, int owner);
void ema_free(struct ema *e);
/* The decay used after global_step completed updates. */
float ema_decay_at(float decay, int num_updates, long global_step);
/* On the owner: shadow -= (1 - d) * (shadow - w), d = ema_decay_at(step). */
void ema_update(struct ema *e, const float *w, long global_step);
/* Every rank's shadows = rank 0's. Collective. */
void ema_sync(struct ema *e, struct comm *c);
/* Exchanges the shadows with the variables *w (TF's variables_to_restore):
 * call again to swap back. No data moves. */
void ema_swap(struct ema *e, float **w);
