/* The EMA registry of ema.h. */
#include "ema.h"

#include <string.h>

void ema_init(struct ema *e, const struct backend *be, const float *w, size_t n, size_t total,
	      float decay, int num_updates, int owner)
{
	memset(e, 0, sizeof(*e));
	e->be = be;
	e->n = n;
	e->total = total;
	e->decay = decay;
	e->num_updates = num_updates;
	e->owner = owner;
	e->shadow = be->alloc(be, total * sizeof(float));
	ema_restart(e, w);
}

void ema_restart(struct ema *e, const float *w)
{
	e->be->copy(e->be, e->shadow, w, e->total * sizeof(float));
}

void ema_free(struct ema *e)
{
	if (e->be)
		e->be->free(e->be, e->shadow);
	memset(e, 0, sizeof(*e));
}

float ema_decay_at(float decay, int num_updates, long global_step)
{
	if (!num_updates)
		return decay;
	float rule = (float)(1.0 + (double)global_step) / (float)(10.0 + (double)global_step);
	return rule < decay ? rule : decay;
}

void ema_update(struct ema *e, const float *w, long global_step)
{
	if (e->owner)
		e->be->ema_update(e->be, e->shadow, w, e->n,
				  ema_decay_at(e->decay, e->num_updates, global_step));
}

void ema_sync(struct ema *e, struct comm *c)
{
	c->ops->bcast(c, e->shadow, e->n, 0);
}

void ema_mean_state(struct ema *e, float *w, struct comm *c)
{
	size_t n = e->total - e->n;
	if (!n || c->size == 1)
		return;
	c->ops->allreduce_start(c, w + e->n, n);
	c->ops->allreduce_wait(c);
	e->be->scale(e->be, w + e->n, n, 1.0f / (float)c->size);
}

void ema_swap(struct ema *e, float **w)
{
	if (e->total > e->n)
		e->be->copy(e->be, e->shadow + e->n, *w + e->n, (e->total - e->n) * sizeof(float));
	float *t = *w;
	*w = e->shadow;
	e->shadow = t;
}
