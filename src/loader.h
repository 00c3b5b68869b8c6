/* The data loader: this rank's rows of each global batch, gathered on the
 * host into pinned staging (alloc_host), two batches deep so the next one
 * is gathered while the backend computes this one. Epoch e's order is a
 * permutation seeded by (seed, e): the same on every rank. */
#pragma once
#include "backend.h"
#include "dataset.h"

/* A batch gathered on the host. */
struct staged {
	float *x;   /* (R, D) alloc_host memory */
	int32_t *y; /* (R) */
	int rows;   /* R, e.g. 64 */
};

struct loader {
	const struct backend *be;
	const struct dataset *data; /* the whole training set */
	uint64_t seed;
	long batch;                 /* B, the global batch, e.g. 128 */
	int rank, size;             /* this rank takes [r*B/N, (r+1)*B/N) */
	uint32_t *perm;             /* (N) the order of epoch order_epoch */
	long order_epoch;           /* -1 before the first */
	struct staged staged[2];    /* this step's and the next one's */
	int slot;                   /* staged[slot] is this step's */
	int have_next;              /* staged[slot] is already filled */
	struct augment *aug;        /* applied to each staged row, or NULL */
};

struct augment;

/* perm (n) = epoch's order of the rows under seed: the same on every rank. */
void loader_order(uint64_t seed, long epoch, uint32_t *perm, size_t n);
/* Allocates the order and both staging buffers for batches of B over size
 * ranks (at start-up). */
void loader_init(struct loader *l, const struct backend *be, const struct dataset *data,
		 uint64_t seed, long batch, int rank, int size);
void loader_free(struct loader *l);
/* This step's batch: global batch pos of epoch, staged now unless it
 * already was. */
struct staged *loader_current(struct loader *l, long epoch, long pos);
/* Gathers global batch pos of epoch into the other buffer, which becomes
 * the current one at the next loader_current. */
void loader_prefetch(struct loader *l, long epoch, long pos);
/* The step is retried: the current batch stays current. */
void loader_retry(struct loader *l);
