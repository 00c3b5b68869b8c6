/* The data loader of loader.h. */
#include "loader.h"
#include "augment.h"
#include "check.h"
#include "rng.h"
#include "log.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define RNG_STREAM_EPOCH 1000 /* + epoch: each epoch's sample order */

void loader_init(struct loader *l, const struct backend *be, const struct dataset *data,
		 uint64_t seed, long batch, int rank, int size, int read_ahead)
{
	memset(l, 0, sizeof(*l));
	l->be = be;
	l->data = data;
	l->seed = seed;
	l->batch = batch;
	l->per_epoch = data->n / batch > 0 ? data->n / batch : 1;
	l->rank = rank;
	l->size = size;
	l->order = ORDER_FEISTEL;
	l->order_epoch = -1;
	l->end = LONG_MAX;
	l->slots = read_ahead + 1;
	l->ring = xcalloc((size_t)l->slots, sizeof(*l->ring));
	size_t rows = (size_t)((batch + size - 1) / size);
	for (int i = 0; i < l->slots; i++) {
		struct staged *s = &l->ring[i];
		s->x = be->alloc_host(be, sizeof(float) * rows * (size_t)data->dim);
		s->y = be->alloc_host(be, sizeof(int32_t) * rows * (size_t)dataset_labels(data));
		s->ids = xmalloc(sizeof(uint32_t) * rows);
		s->g = -1;
	}
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
}

/* Stops the reader thread, if it runs; the ring keeps what it holds. */
static void reader_stop(struct loader *l)
{
	if (!l->running)
		return;
	pthread_mutex_lock(&l->mu);
	l->quit = 1;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	l->running = 0;
	l->quit = 0;
}

void loader_set_order(struct loader *l, enum order_kind k)
{
	reader_stop(l);
	for (int i = 0; i < l->slots; i++)
		l->ring[i].g = -1; /* staged in the other order */
	free(l->perm);
	l->perm = NULL;
	l->order = k;
	l->order_epoch = -1;
	if (k == ORDER_LEGACY)
		l->perm = xmalloc(sizeof(uint32_t) * (size_t)l->data->n);
}

void loader_set_end(struct loader *l, long end)
{
	pthread_mutex_lock(&l->mu);
	l->end = end;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

void loader_free(struct loader *l)
{
	if (!l->ring) {
		memset(l, 0, sizeof(*l));
		return;
	}
	reader_stop(l);
	free(l->perm);
	for (int i = 0; i < l->slots; i++) {
		l->be->free_host(l->be, l->ring[i].x);
		l->be->free_host(l->be, l->ring[i].y);
		free(l->ring[i].ids);
	}
	free(l->ring);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
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

/* Reads this rank's rows [r*B/N, (r+1)*B/N) of global batch g into s,
 * augmented when l->aug says so (the reader thread). */
static void stage(struct loader *l, long g, struct staged *s)
{
	long epoch = g / l->per_epoch, pos = g % l->per_epoch;
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
	const struct dataset *d = l->data;
	s->bad = (d->tokens ? dataset_read_windows(d, s->ids, s->rows,
						   dataset_window_shift(l->seed, epoch, d->window),
						   s->x, s->y, s->why)
			    : dataset_read_rows(d, s->ids, s->rows, s->x, s->y, s->why)) != 0;
	if (s->bad) { /* the step still runs its collectives on it: harmless rows */
		memset(s->x, 0, sizeof(float) * (size_t)s->rows * (size_t)d->dim);
		memset(s->y, 0, sizeof(int32_t) * (size_t)s->rows * (size_t)dataset_labels(d));
	} else if (l->aug) {
		augment_rows(l->aug, s->x, s->rows, s->ids, l->data->first, l->seed, epoch);
	}
}

/* The reader thread: stages batches next, next + 1, ... while their slots
 * are free (up to head + slots - 1) and before end. A batch begun before
 * the step jumped elsewhere (gen changed) is not published. */
static void *reader_main(void *arg)
{
	struct loader *l = arg;
	pthread_mutex_lock(&l->mu);
	for (;;) {
		while (!l->quit && !(l->next < l->head + l->slots && l->next < l->end))
			pthread_cond_wait(&l->cv, &l->mu);
		if (l->quit)
			break;
		long g = l->next++, gen = l->gen;
		struct staged *s = &l->ring[g % l->slots];
		s->g = -1;
		pthread_mutex_unlock(&l->mu);
		stage(l, g, s);
		pthread_mutex_lock(&l->mu);
		if (gen == l->gen) {
			s->g = g;
			pthread_cond_broadcast(&l->cv);
		}
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

struct staged *loader_current(struct loader *l, long epoch, long pos)
{
	long g = epoch * l->per_epoch + pos;
	struct staged *s = &l->ring[g % l->slots];
	pthread_mutex_lock(&l->mu);
	if (!l->running || g < l->head || g > l->next) {
		/* A jump (or the start): the reader goes on from g, or from
		 * g + 1 when g's slot still holds it. */
		l->gen++;
		l->next = s->g == g ? g + 1 : g;
	}
	l->head = g;
	if (l->end <= g)
		l->end = g + 1;
	/* The reader is woken when half the ring is free (or this batch is
	 * not there yet): it then stages several batches a wake-up, and each
	 * wake-up's switches cost the step once, not once a batch. */
	if (s->g != g || l->head + l->slots - l->next >= (l->slots + 1) / 2)
		pthread_cond_broadcast(&l->cv);
	if (!l->running) {
		int rc = pthread_create(&l->thread, NULL, reader_main, l);
		if (rc)
			check_fail("libc", "pthread_create(reader)", strerror(rc), __FILE__, __LINE__);
		pthread_setname_np(l->thread, "mtrain-reader"); /* as top and perf show it */
		l->running = 1;
	}
	if (s->g != g) {
		double t0 = log_now();
		while (s->g != g)
			pthread_cond_wait(&l->cv, &l->mu);
		l->wait += log_now() - t0;
	}
	pthread_mutex_unlock(&l->mu);
	return s;
}
