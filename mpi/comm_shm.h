/* The MPI data plane's shared-memory staging (comm_shm.c), for ZeRO-1's
 * reduce-scatter and all-gather when every rank is on one node; and the
 * rank-order sums it shares with the plane's all-to-all path, so either
 * path gives the same bits. Internal to mpi/. */
#pragma once
#include <stddef.h>

#include "comm.h"

/* One shared-memory file, after its first page (SHM_HEAD) a segment per
 * rank, each holding two generations (phases alternate between them, so a
 * rank never overwrites what a slower one still reads from the previous
 * phase) of [size * chunk: reduce-scatter staging, a piece of each rank's
 * shard][chunk: all-gather, a piece of its own]. Large buffers go a chunk
 * of each shard at a time. Zero before the first shm_reserve. */
struct shm_window {
	void *map;        /* the segments, mapped here; NULL until reserved */
	size_t map_bytes;
	float **seg;      /* (size) each rank's segment in map */
	size_t chunk;     /* values of a shard per phase */
	unsigned phases;  /* phases so far: the generation's parity */
	int no_shm;       /* the segments could not be made: MPI serves */
	const float **in; /* (size) the pieces a reduce-scatter sums, in rank order */
};

/* The segments for shards of each values (collective on the first call and
 * whenever the chunk changes; inside the caller's watchdog guard). 0, or -1
 * on every rank when a rank could not have them (no memory, or no way to
 * open rank 0's file), with one warning: MPI serves instead, for the rest
 * of the run. MTRAIN_TEST_FAULT=shm:RANK fails RANK's mapping, for tests. */
int shm_reserve(struct comm *c, struct shm_window *w, size_t each);
/* After shm_reserve: buf (n, shards of each) as comm_ops.reduce_scatter
 * and .allgather leave it. Collective. */
void shm_reduce_scatter(struct comm *c, struct shm_window *w, float *buf, size_t n, size_t each);
void shm_allgather(struct comm *c, struct shm_window *w, float *buf, size_t n, size_t each);
/* Unmaps the segments and frees w's arrays (w keeps no_shm and its
 * phase count). */
void shm_free(struct shm_window *w);

/* The part of shard q (of n values, shard_plan's split over c->size ranks)
 * at off within it, at most chunk long: its first value, and its length in
 * *len. */
size_t shard_piece(const struct comm *c, size_t n, int q, size_t off, size_t chunk, size_t *len);
/* out[0, len) = in[0] + in[1] + ... + in[ranks - 1], added in rank order:
 * the same bits whichever path brought the pieces. out may be one of in. */
void sum_in_rank_order(float *out, const float *const *in, int ranks, size_t len);
