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
	float *shadow;   /* (P) backend memory: T shadows, then room for the
			  * non-trainable variables ema_swap brings along */
	size_t n;        /* T: the trainable values (params.h), e.g. 269322 */
	size_t total;    /* P: all of the variables' values */
	float decay;     /* e.g. 0.999 */
	int num_updates; /* 1: decay = min(decay, (1 + t) / (10 + t)) */
	int owner;       /* 1 on rank 0, which alone updates */
};

/* Allocates the shadows of the first n (T) of total (P) values of w and
 * sets them to w. owner: this rank updates. */
void ema_init(struct ema *e, const struct backend *be, const float *w, size_t n, size_t total,
	      float decay, int num_updates, int owner);
void ema_free(struct ema *e);
/* Every shadow (and the room after them) = w again: a fresh run's
 * starting weights once they are known (--init-from). */
void ema_restart(struct ema *e, const float *w);
/* The decay used after global_step completed updates. */
float ema_decay_at(float decay, int num_updates, long global_step);
/* On the owner: shadow -= (1 - d) * (shadow - w), d = ema_decay_at(step). */
void ema_update(struct ema *e, const float *w, long global_step);
/* Every rank's shadows = rank 0's. Collective. */
void ema_sync(struct ema *e, struct comm *c);
/* The non-trainable values of w (P - T: batchnorm's moving statistics,
 * which each rank's own batches move) = their mean over the ranks, on
 * every rank. Collective. */
void ema_mean_state(struct ema *e, float *w, struct comm *c);
/* Exchanges the shadows with the variables *w (TF's variables_to_restore):
 * call again to swap back. Only the non-trainable values (P - T) move: the
 * swapped-in buffer takes *w's, so that evaluating with the shadows uses
 * the current moving statistics. */
void ema_swap(struct ema *e, float **w);
