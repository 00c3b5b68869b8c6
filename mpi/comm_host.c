/* The MPI data plane, on host memory: gradient all-reduces merged into one
 * call, ZeRO-1's reduce-scatter and all-gather through shared memory when
 * every rank is on one node (comm_shm.c) and through MPI's collectives
 * otherwise, with the same rank-order sums either way. */
#include "comm.h"
#include "check.h"
#include "comm_plane.h"
#include "comm_shm.h"
#include "mtrain.h"
#include "shard.h"
#include "watchdog.h"

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Every collective below runs between watchdog_enter and watchdog_leave:
 * the watchdog (watchdog.c) ends one that runs past --comm-timeout with a
 * message. */

static void mpi_allreduce(struct comm *c, float *buf, size_t n)
{
	comm_span_begin(c, "allreduce");
	watchdog_enter(c, "all-reduce of gradients");
	for (size_t off = 0; off < n; off += MPI_CHUNK) {
		size_t len = n - off < MPI_CHUNK ? n - off : MPI_CHUNK;
		MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf + off, (int)len, MPI_FLOAT,
					MPI_SUM, MPI_COMM_WORLD));
	}
	watchdog_leave();
	comm_span_end(c);
}

/* The MPI data plane's state (c->impl): buckets merged so far, reduced in
 * one call by allreduce_wait, and ZeRO-1's staging. */
struct mpi_plane {
	float *pending; /* (pending_n) the union of the buckets since the last wait */
	size_t pending_n;
	struct shm_window shm; /* every rank on one node: shared memory */
	const float **in; /* (size) the pieces an all-to-all's sum adds, in rank order */
	float *scratch;  /* (scratch_n) MPI's all-to-all lands here */
	size_t scratch_n;
	int *counts, *displs; /* (size) without shared memory: MPI's counts */
	int *rcounts, *rdispls; /* (size) the all-to-all's receive side */
};

/* Buckets arrive last layer first and adjacent (up to the registry's
 * alignment padding, zero on every rank): on host memory, with no spare core
 * to progress a non-blocking reduction, one call over their union is
 * fastest. */
static void mpi_allreduce_start(struct comm *c, float *buf, size_t n)
{
	struct mpi_plane *p = c->impl;
	if (p->pending && buf + n <= p->pending && p->pending - (buf + n) < PARAM_ALIGN) {
		p->pending_n += (size_t)(p->pending - buf);
		p->pending = buf;
		return;
	}
	if (p->pending)
		mpi_allreduce(c, p->pending, p->pending_n);
	p->pending = buf;
	p->pending_n = n;
}

static void mpi_allreduce_wait(struct comm *c)
{
	struct mpi_plane *p = c->impl;
	if (p->pending)
		mpi_allreduce(c, p->pending, p->pending_n);
	p->pending = NULL;
	p->pending_n = 0;
}

/* MPI's counts and displacements are int: ZeRO-1 over MPI aborts past
 * that (shards of each values on every rank). */
static void check_int_counts(struct comm *c, size_t each)
{
	if ((size_t)c->size * each > (size_t)INT32_MAX)
		check_fail("MPI", "ZeRO-1 over MPI's collectives",
			   "over 2^31 trainable values (run with --zero 0)", __FILE__, __LINE__);
}

/* The counts and displacements of shard_plan's split of n (each per
 * rank) for MPI's v-collectives. */
static void shard_counts(struct comm *c, size_t n, size_t each, int *counts, int *displs)
{
	check_int_counts(c, each);
	for (int r = 0; r < c->size; r++) {
		struct shard s;
		shard_plan(&s, n, r, c->size);
		counts[r] = (int)s.len;
		displs[r] = (int)s.first;
	}
}

/* Pieces of each shard an all-to-all moves at a time without shared
 * memory: the scratch is size of them. */
#define A2A_CHUNK ((size_t)1 << 18)

/* The reduce-scatter without shared memory (across nodes, or when it could
 * not be had): an all-to-all brings each rank every rank's piece of its
 * shard, a chunk at a time, and the rank sums them as shm_reduce_scatter
 * does, in rank order, so the sums are the same bits on either plane
 * (MPI_Reduce_scatter adds in an order of its own). */
static void a2a_reduce_scatter(struct comm *c, struct mpi_plane *p, float *buf, size_t n,
			       size_t each)
{
	check_int_counts(c, each);
	size_t chunk = each < A2A_CHUNK ? (each ? each : 1) : A2A_CHUNK;
	if (p->scratch_n < (size_t)c->size * chunk) {
		free(p->scratch);
		p->scratch_n = (size_t)c->size * chunk;
		p->scratch = xmalloc(p->scratch_n * sizeof(float));
	}
	for (size_t off = 0; off < each; off += chunk) {
		size_t len, at = shard_piece(c, n, c->rank, off, chunk, &len);
		for (int q = 0; q < c->size; q++) {
			size_t qlen, qat = shard_piece(c, n, q, off, chunk, &qlen);
			p->counts[q] = (int)qlen;
			p->displs[q] = (int)qat;
			p->rcounts[q] = (int)len;
			p->rdispls[q] = (int)((size_t)q * chunk);
			p->in[q] = p->scratch + (size_t)q * chunk;
		}
		MPI_CHECK(MPI_Alltoallv(buf, p->counts, p->displs, MPI_FLOAT, p->scratch,
					p->rcounts, p->rdispls, MPI_FLOAT, MPI_COMM_WORLD));
		sum_in_rank_order(buf + at, p->in, c->size, len);
	}
}

/* Shared memory when every rank is on this node (3 to 4 times faster than
 * MPI's collectives here: bench/bench_collectives), else MPI's. */
static int use_shm(struct comm *c, struct mpi_plane *p, size_t each)
{
	return c->local_size == c->size && shm_reserve(c, &p->shm, each) == 0;
}

static void mpi_reduce_scatter(struct comm *c, float *buf, size_t n, size_t each)
{
	struct mpi_plane *p = c->impl;
	mpi_allreduce_wait(c); /* no bucket left pending */
	comm_span_begin(c, "reduce-scatter");
	watchdog_enter(c, "reduce-scatter of gradients");
	if (use_shm(c, p, each))
		shm_reduce_scatter(c, &p->shm, buf, n, each);
	else
		a2a_reduce_scatter(c, p, buf, n, each);
	watchdog_leave();
	comm_span_end(c);
}

static void mpi_allgather(struct comm *c, float *buf, size_t n, size_t each)
{
	struct mpi_plane *p = c->impl;
	comm_span_begin(c, "all-gather");
	watchdog_enter(c, "all-gather of weights");
	if (use_shm(c, p, each)) {
		shm_allgather(c, &p->shm, buf, n, each);
	} else {
		shard_counts(c, n, each, p->counts, p->displs);
		MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, p->counts,
					 p->displs, MPI_FLOAT, MPI_COMM_WORLD));
	}
	watchdog_leave();
	comm_span_end(c);
}

static void mpi_bcast(struct comm *c, float *buf, size_t n, int root)
{
	comm_bcast_host(c, buf, n * sizeof(float), root);
}

static void mpi_release(struct comm *c)
{
	struct mpi_plane *p = c->impl;
	shm_free(&p->shm);
	free(p->scratch);
	free(p->counts);
	free(p->displs);
	free(p->rcounts);
	free(p->rdispls);
	free(p->in);
	free(p);
}

/* Host memory needs no backend: be is not used. */
static void *mpi_start(struct comm *c, const struct backend *be)
{
	struct mpi_plane *p = xcalloc(1, sizeof(*p));
	p->counts = xcalloc((size_t)c->size, sizeof(int));
	p->displs = xcalloc((size_t)c->size, sizeof(int));
	p->rcounts = xcalloc((size_t)c->size, sizeof(int));
	p->rdispls = xcalloc((size_t)c->size, sizeof(int));
	p->in = xcalloc((size_t)c->size, sizeof(*p->in));
	c->zero_pays = c->local_size == c->size;
	return p;
}

const struct comm_ops comm_mpi_plane = {
	.name = "mpi",
	.allreduce_start = mpi_allreduce_start,
	.allreduce_wait = mpi_allreduce_wait,
	.reduce_scatter = mpi_reduce_scatter,
	.allgather = mpi_allgather,
	.bcast = mpi_bcast,
	.start = mpi_start,
	.release = mpi_release,
};
