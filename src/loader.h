/* The data loader: this rank's rows of each global batch, read from the
 * training set (dataset_read_rows: streamed from the file, checked) and
 * augmented by a reader thread into a ring of pinned staging buffers
 * (alloc_host), up to read_ahead batches ahead of the step, so that the
 * step finds its batch ready. The reader is woken once half the ring is
 * free (or the step waits), and then stages batches until it is full:
 * its wake-ups cost the step once every few batches, not every batch. Epoch e's order is a permutation seeded by
 * (seed, e): the same on every rank. A run's order is computed (order_row,
 * no memory) unless it resumed a checkpoint of the stored order
 * (ORDER_LEGACY: loader_order's permutation, N row ids). Batches are
 * numbered globally, g = epoch * steps_per_epoch + pos; the reader stages
 * g in ring slot g % (read_ahead + 1). */
#pragma once
#include <pthread.h>

#include "backend.h"
#include "dataset.h"
#include "order.h"

/* A batch gathered on the host. */
struct staged {
	float *x;   /* (R, D) alloc_host memory */
	int32_t *y; /* (R, labels a row: dataset_labels) */
	uint32_t *ids; /* (R) the rows' ids in the training set */
	int rows;   /* R, e.g. 64 */
	long g;     /* the global batch number it holds, or -1 */
	int bad;    /* reading it failed: why says so */
	char why[DATASET_WHY_LEN];
};

struct loader {
	const struct backend *be;
	const struct dataset *data; /* the whole training set */
	uint64_t seed;
	long batch;                 /* B, the global batch, e.g. 128 */
	long per_epoch;             /* global batches in an epoch, N / B */
	int rank, size;             /* this rank takes [r*B/N, (r+1)*B/N) */
	enum order_kind order;      /* ORDER_FEISTEL unless loader_set_order */
	uint32_t *perm;             /* (N) ORDER_LEGACY only: the order of
				     * epoch order_epoch; NULL otherwise */
	long order_epoch;           /* -1 before the first */
	struct augment *aug;        /* applied to each staged row, or NULL */
	int slots;                  /* read_ahead + 1 */
	struct staged *ring;        /* (slots) */
	long end;                   /* no batch at or past this is read */
	/* Shared with the reader thread, under mu: */
	pthread_t thread;
	int running;                /* the thread was started */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	long head;                  /* the batch the step holds: slots of
				     * [head, head + slots) are the reader's to
				     * fill, beyond head */
	long next;                  /* the next batch the reader stages */
	long gen;                   /* bumped when the step jumps elsewhere */
	int quit;
	double wait;                /* seconds loader_current waited for the
				     * reader (its batch not yet ready) */
};

struct augment;

/* perm (n) = epoch's stored (ORDER_LEGACY) order of the rows under seed:
 * the same on every rank. */
void loader_order(uint64_t seed, long epoch, uint32_t *perm, size_t n);
/* ids (count) = positions [lo, lo + count) of epoch's order k of n rows
 * under seed (ORDER_LEGACY computes the whole permutation each call). */
void loader_rows(enum order_kind k, uint64_t seed, long epoch, long lo, int count, long n,
		 uint32_t *ids);
/* Allocates read_ahead + 1 staging buffers for batches of B over size
 * ranks (at start-up); the order is ORDER_FEISTEL. The reader starts at
 * the first loader_current. */
void loader_init(struct loader *l, const struct backend *be, const struct dataset *data,
		 uint64_t seed, long batch, int rank, int size, int read_ahead);
void loader_free(struct loader *l);
/* The run's order is k (what its checkpoint says); ORDER_LEGACY allocates
 * the N-row permutation. Before the first batch. */
void loader_set_order(struct loader *l, enum order_kind k);
/* No batch numbered end or later will be asked for (the run's last step):
 * the reader stops there. */
void loader_set_end(struct loader *l, long end);
/* This step's batch: global batch pos of epoch, waited for (it is read
 * ahead). The batch before it is released to the reader; asking for the
 * same batch again (a retried step) gives it again, unchanged. A batch
 * that could not be read comes back with bad set and why. */
struct staged *loader_current(struct loader *l, long epoch, long pos);
