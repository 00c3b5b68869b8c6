/* ZeRO-1's split of the trainable values over ranks: a property of the
 * parameter registry (params.h) and the communicator (mpi/) both, so it
 * depends on neither. */
#pragma once
#include <stddef.h>

#include "mtrain.h"

/* rank r owns [r * each, r * each + len) of the trainable values [0, T).
 * each is a multiple of PARAM_ALIGN, so every rank's block of a buffer of
 * ranks * each values (the padded length the collectives see: NCCL's
 * blocks are equal) starts aligned. */
struct shard {
	size_t total;  /* T, e.g. 269322 */
	size_t each;   /* per rank, e.g. 134672 on 2 ranks */
	size_t first;  /* this rank's first value, rank * each (T when none) */
	size_t len;    /* its values: each, fewer or none at the end */
	int ranks;     /* split over, e.g. 2; 1: unsharded (the whole) */
};

/* rank's shard of total values split over ranks (ranks 1: the whole). */
void shard_plan(struct shard *s, size_t total, int rank, int ranks);
