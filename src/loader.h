/* The data loader: this rank's rows of each global batch, gathered on the
 * host into pinned staging (alloc_host), two batches deep so the next one
 * is gathered while the backend computes this one. Epoch e's order is a
 * permutation seeded by (seed, e): the same on every rank. A run's order
 * is computed (order_row, no memory) unless it resumed a checkpoint of the
 * stored order (ORDER_LEGACY: loader_order's permutation, N row ids). */
#pragma once
#include "backend.h"
#include "dataset.h"
#include "order.h"

/* A batch gathered on the host. */
struct staged {
	float *x;   /* (R, D) alloc_host memory */
	int32_t *y; /* (R) */
	uint32_t *ids; /* (R) the rows' ids in the training set */
	int rows;   /* R, e.g. 64 */
};

struct loader {
	const struct backend *be;
	const struct dataset *data; /* the whole training set */
	uint64_t seed;
	long batch;                 /* B, the global batch, e.g. 128 */
	int rank, size;             /* this rank takes [r*B/N, (r+1)*B/N) */
	enum order_kind order;      /* ORDER_FEISTEL unless loader_set_order */
	uint32_t *perm;             /* (N) ORDER_LEGACY only: the order of
				     * epoch order_epoch; NULL otherwise */
	long order_epoch;           /* -1 before the first */
	struct staged staged[2];    /* this step's and the next one's */
	int slot;                   /* staged[slot] is this step's */
	int have_next;              /* staged[slot] is already filled */
	struct augment *aug;        /* applied to each staged row, or NULL */
};

struct augment;

/* perm (n) = epoch's stored (ORDER_LEGACY) order of the rows under seed:
 * the same on every rank. */
void loader_order(uint64_t seed, long epoch, uint32_t *perm, size_t n);
/* ids (count) = positions [lo, lo + count) of epoch's order k of n rows
 * under seed (ORDER_LEGACY computes the whole permutation each call). */
void loader_rows(enum order_kind k, uint64_t seed, long epoch, long lo, int count, long n,
		 uint32_t *ids);
/* Allocates both staging buffers for batches of B over size ranks (at
 * start-up); the order is ORDER_FEISTEL. */
void loader_init(struct loader *l, const struct backend *be, const struct dataset *data,
		 uint64_t seed, long batch, int rank, int size);
void loader_free(struct loader *l);
/* The run's order is k (what its checkpoint says); ORDER_LEGACY allocates
 * the N-row permutation. Before the first batch. */
void loader_set_order(struct loader *l, enum order_kind k);
/* This step's batch: global batch pos of epoch, staged now unless it
 * already was. */
struct staged *loader_current(struct loader *l, long epoch, long pos);
/* Gathers global batch pos of epoch into the other buffer, which becomes
 * the current one at the next loader_current. */
void loader_prefetch(struct loader *l, long epoch, long pos);
/* The step is retried: the current batch stays current. */
void loader_retry(struct loader *l);
