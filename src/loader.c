/* The data loader of loader.h. */
#include "loader.h"
#include "augment.h"
#include "check.h"
#include "rng.h"

#include <stdlib.h>
#include <string.h>

#define RNG_STREAM_EPOCH 1000 /* + epoch: each epoch's sample order */

void loader_init(struct loader *l, const struct backend *be, const struct dataset *data,
		 uint64_t seed, long batch, int rank, int size)
{
	memset(l, 0, sizeof(*l));
	l->be = be;
	l->data = data;
	l->seed = seed;
	l->batch = batch;
	l->rank = rank;
	l->size = size;
	l->order = ORDER_FEISTEL;
	l->order_epoch = -1;
	size_t rows = (size_t)((batch + size - 1) / size);
	for (int i = 0; i < 2; i++) {
		l->staged[i].x = be->alloc_host(be, sizeof(float) * rows * (size_t)data->dim);
		l->staged[i].y = be->alloc_host(be, sizeof(int32_t) * rows);
		l->staged[i].ids = xmalloc(sizeof(uint32_t) * rows);
	}
}

void loader_set_order(struct loader *l, enum order_kind k)
{
	free(l->perm);
	l->perm = NULL;
	l->order = k;
	l->order_epoch = -1;
	if (k == ORDER_LEGACY)
		l->perm = xmalloc(sizeof(uint32_t) * (size_t)l->data->n);
}

void loader_free(struct loader *l)
{
	free(l->perm);
	for (int i = 0; l->be && i < 2; i++) {
		l->be->free_host(l->be, l->staged[i].x);
		l->be->free_host(l->be, l->staged[i].y);
		free(l->staged[i].ids);
	}
	memset(l, 0, sizeof(*l));
}

void loader_order(uint64_t seed, long epoch, uint32_t *perm, size_t n)
{
	struct rng r;
	rng_init(&r, seed, RNG_STREAM_EPOCH + (uint64_t)epoch);
	rng_permutation(&r, perm, n);
}

void loader_rows(enum order_kind k, uint64_t seed, long epoch, long lo, int count, long n,
		 uint32_t *ids)
{
	if (k == ORDER_LEGACY) {
		uint32_t *perm = xmalloc(sizeof(uint32_t) * (size_t)n);
		loader_order(seed, epoch, perm, (size_t)n);
		memcpy(ids, perm + lo, sizeof(uint32_t) * (size_t)count);
		free(perm);
		return;
	}
	for (int i = 0; i < count; i++)
		ids[i] = (uint32_t)order_row(seed, epoch, (uint64_t)(lo + i), (uint64_t)n);
}

/* Gathers this rank's rows [r*B/N, (r+1)*B/N) of global batch pos of epoch
 * into s, augmented when l->aug says so. */
static void stage(struct loader *l, long epoch, long pos, struct staged *s)
{
	long lo = pos * l->batch + l->batch * l->rank / l->size;
	long hi = pos * l->batch + l->batch * (l->rank + 1) / l->size;
	s->rows = (int)(hi - lo);
	if (l->order == ORDER_LEGACY && l->order_epoch != epoch) {
		loader_order(l->seed, epoch, l->perm, (size_t)l->data->n);
		l->order_epoch = epoch;
	}
	if (l->order == ORDER_LEGACY)
		memcpy(s->ids, l->perm + lo, sizeof(uint32_t) * (size_t)s->rows);
	else
		loader_rows(l->order, l->seed, epoch, lo, s->rows, l->data->n, s->ids);
	dataset_gather(l->data, s->ids, s->rows, s->x, s->y);
	if (l->aug)
		augment_rows(l->aug, s->x, s->rows, s->ids, l->data->first, l->seed, epoch);
}

struct staged *loader_current(struct loader *l, long epoch, long pos)
{
	struct staged *cur = &l->staged[l->slot];
	if (!l->have_next)
		stage(l, epoch, pos, cur);
	l->have_next = 0;
	return cur;
}

void loader_prefetch(struct loader *l, long epoch, long pos)
{
	stage(l, epoch, pos, &l->staged[l->slot ^ 1]);
	l->slot ^= 1;
	l->have_next = 1;
}

void loader_retry(struct loader *l)
{
	if (l->have_next)
		l->slot ^= 1; /* back to this step's batch, still staged */
	l->have_next = 1;
}
