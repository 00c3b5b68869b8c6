/* The MPI implementation of the communicator: start-up, rank discovery, the
 * host-memory data plane and the control plane every data plane shares. */
#include "comm.h"
#include "check.h"
#include "log.h"
#include "params.h"
#include "timeline.h"
#include "watchdog.h"

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every collective below runs between guard() and unguard(): the watchdog
 * (watchdog.c) ends one that runs past --comm-timeout with a message. */
static void guard(struct comm *c, const char *op) { watchdog_enter(c, op); }

static void unguard(void) { watchdog_leave(); }

/* MPI counts are int: large buffers go in chunks. */
#define MPI_CHUNK ((size_t)1 << 30)

static void mpi_allreduce(struct comm *c, float *buf, size_t n)
{
	timeline_begin("allreduce");
	guard(c, "all-reduce of gradients");
	for (size_t off = 0; off < n; off += MPI_CHUNK) {
		size_t len = n - off < MPI_CHUNK ? n - off : MPI_CHUNK;
		MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf + off, (int)len, MPI_FLOAT,
					MPI_SUM, MPI_COMM_WORLD));
	}
	unguard();
	timeline_end();
}

/* The MPI data plane's state (c->impl): buckets merged so far, reduced in
 * one call by allreduce_wait, and ZeRO-1's shared-memory staging. */
struct mpi_plane {
	float *pending; /* (pending_n) the union of the buckets since the last wait */
	size_t pending_n;
	/* Every rank on one node: one window of shared memory, a segment per
	 * rank, each holding two generations (phases alternate between them,
	 * so a rank never overwrites what a slower one still reads from the
	 * previous phase) of [size * chunk: reduce-scatter staging, a piece
	 * of each rank's shard][chunk: all-gather, a piece of its own]. Large
	 * buffers go a chunk of each shard at a time. */
	MPI_Win win;     /* MPI_WIN_NULL until the first call */
	float **seg;     /* (size) each rank's segment, mapped here */
	size_t chunk;    /* values of a shard per phase */
	unsigned phases; /* phases so far: the generation's parity */
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

/* The counts and displacements of shard_plan's split of n (each per
 * rank) for MPI's v-collectives; aborts when a shard passes int's range. */
static void shard_counts(struct comm *c, size_t n, size_t each, int *counts, int *displs)
{
	if (each > (size_t)INT32_MAX || (size_t)c->size * each > (size_t)INT32_MAX)
		check_fail("MPI", "shard_counts", "a shard of over 2^31 values", __FILE__, __LINE__);
	for (int r = 0; r < c->size; r++) {
		struct shard s;
		shard_plan(&s, n, r, c->size);
		counts[r] = (int)s.len;
		displs[r] = (int)s.first;
	}
}

/* Every rank passes: stores before it are seen by loads after it, in
 * every segment. */
static void shm_barrier(struct mpi_plane *p)
{
	MPI_CHECK(MPI_Win_sync(p->win));
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_CHECK(MPI_Win_sync(p->win));
}

static void shm_free(struct mpi_plane *p)
{
	if (p->win == MPI_WIN_NULL)
		return;
	MPI_CHECK(MPI_Win_unlock_all(p->win));
	MPI_CHECK(MPI_Win_free(&p->win));
	free(p->seg);
	p->seg = NULL;
}

/* At most this many values of each shard per phase: the window is
 * 2 (size + 1) chunks per rank whatever the model (18 MiB per rank on 8). */
#define SHM_CHUNK ((size_t)1 << 18)

/* The window for shards of each values (collective on the first call and
 * whenever the chunk changes). */
static void shm_reserve(struct comm *c, struct mpi_plane *p, size_t each)
{
	size_t chunk = each < SHM_CHUNK ? (each ? each : 1) : SHM_CHUNK;
	if (p->win != MPI_WIN_NULL && p->chunk == chunk)
		return;
	shm_free(p);
	p->chunk = chunk;
	MPI_Info info;
	MPI_CHECK(MPI_Info_create(&info));
	MPI_CHECK(MPI_Info_set(info, "alloc_shared_noncontig", "true")); /* each near its rank */
	float *mine;
	size_t bytes = 2 * ((size_t)c->size + 1) * chunk * sizeof(float);
	MPI_CHECK(MPI_Win_allocate_shared((MPI_Aint)bytes, sizeof(float), info, MPI_COMM_WORLD,
					  &mine, &p->win));
	MPI_CHECK(MPI_Info_free(&info));
	p->seg = xcalloc((size_t)c->size, sizeof(float *));
	for (int r = 0; r < c->size; r++) {
		MPI_Aint got;
		int unit;
		MPI_CHECK(MPI_Win_shared_query(p->win, r, &got, &unit, &p->seg[r]));
	}
	MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, p->win));
}

/* Rank r's segment in this phase's generation. */
static float *shm_gen(const struct comm *c, const struct mpi_plane *p, int r, unsigned phase)
{
	return p->seg[r] + (size_t)(phase & 1) * ((size_t)c->size + 1) * p->chunk;
}

/* The part of shard q (of n values, each per rank) at off within it, at
 * most chunk long: its first value, and its length in *len. */
static size_t piece(const struct comm *c, size_t n, size_t each, int q, size_t off, size_t chunk,
		    size_t *len)
{
	struct shard s;
	shard_plan(&s, n, q, c->size);
	*len = s.len > off ? (s.len - off < chunk ? s.len - off : chunk) : 0;
	return s.first + off;
}

/* Sums a block of SUM_BLOCK values at a time over the ranks, in rank order,
 * so the running sum stays in L1. */
#define SUM_BLOCK 2048

static void shm_reduce_scatter(struct comm *c, struct mpi_plane *p, float *buf, size_t n,
			       size_t each)
{
	shm_reserve(c, p, each);
	size_t chunk = p->chunk;
	for (size_t off = 0; off < each; off += chunk) {
		unsigned phase = p->phases++;
		/* Each other rank's piece staged in its slot; this rank's own is
		 * read from buf. */
		float *stage = shm_gen(c, p, c->rank, phase);
		for (int q = 0; q < c->size; q++) {
			size_t len, at = piece(c, n, each, q, off, chunk, &len);
			if (q != c->rank)
				memcpy(stage + (size_t)q * chunk, buf + at, len * sizeof(float));
		}
		shm_barrier(p);
		size_t len, at = piece(c, n, each, c->rank, off, chunk, &len);
		float sum[SUM_BLOCK];
		for (size_t b = 0; b < len; b += SUM_BLOCK) {
			size_t m = len - b < SUM_BLOCK ? len - b : SUM_BLOCK;
			for (int q = 0; q < c->size; q++) {
				const float *restrict in =
					q == c->rank ? buf + at + b
						     : shm_gen(c, p, q, phase) + (size_t)c->rank * chunk + b;
				if (q == 0)
					memcpy(sum, in, m * sizeof(float));
				else
					for (size_t i = 0; i < m; i++)
						sum[i] += in[i];
			}
			memcpy(buf + at + b, sum, m * sizeof(float));
		}
	}
}

static void shm_allgather(struct comm *c, struct mpi_plane *p, float *buf, size_t n, size_t each)
{
	shm_reserve(c, p, each);
	size_t chunk = p->chunk, slot = (size_t)c->size * chunk;
	for (size_t off = 0; off < each; off += chunk) {
		unsigned phase = p->phases++;
		size_t len, at = piece(c, n, each, c->rank, off, chunk, &len);
		memcpy(shm_gen(c, p, c->rank, phase) + slot, buf + at, len * sizeof(float));
		shm_barrier(p);
		for (int q = 0; q < c->size; q++) {
			at = piece(c, n, each, q, off, chunk, &len);
			if (q != c->rank)
				memcpy(buf + at, shm_gen(c, p, q, phase) + slot, len * sizeof(float));
		}
	}
}

/* Shared memory when every rank is on this node (3x faster than MPI's
 * collectives here: jobs/bench_collectives), else MPI's. */
static void mpi_reduce_scatter(struct comm *c, float *buf, size_t n, size_t each)
{
	struct mpi_plane *p = c->impl;
	mpi_allreduce_wait(c); /* no bucket left pending */
	timeline_begin("reduce-scatter");
	guard(c, "reduce-scatter of gradients");
	if (c->local_size == c->size) {
		shm_reduce_scatter(c, p, buf, n, each);
	} else {
		int *counts = xcalloc((size_t)c->size, sizeof(int));
		int *displs = xcalloc((size_t)c->size, sizeof(int));
		shard_counts(c, n, each, counts, displs);
		/* In place, the sum lands at buf's start: moved to the shard. */
		MPI_CHECK(MPI_Reduce_scatter(MPI_IN_PLACE, buf, counts, MPI_FLOAT, MPI_SUM,
					     MPI_COMM_WORLD));
		if (c->rank)
			memcpy(buf + displs[c->rank], buf, (size_t)counts[c->rank] * sizeof(float));
		free(counts);
		free(displs);
	}
	unguard();
	timeline_end();
}

static void mpi_allgather(struct comm *c, float *buf, size_t n, size_t each)
{
	struct mpi_plane *p = c->impl;
	timeline_begin("all-gather");
	guard(c, "all-gather of weights");
	if (c->local_size == c->size) {
		shm_allgather(c, p, buf, n, each);
	} else {
		int *counts = xcalloc((size_t)c->size, sizeof(int));
		int *displs = xcalloc((size_t)c->size, sizeof(int));
		shard_counts(c, n, each, counts, displs);
		MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs,
					 MPI_FLOAT, MPI_COMM_WORLD));
		free(counts);
		free(displs);
	}
	unguard();
	timeline_end();
}

static void mpi_bcast(struct comm *c, float *buf, size_t n, int root)
{
	comm_bcast_host(c, buf, n * sizeof(float), root);
}

static void mpi_release(struct comm *c)
{
	shm_free(c->impl);
	free(c->impl);
	c->impl = NULL;
	c->ops = NULL;
}

static const struct comm_ops mpi_ops = {
	.name = "mpi",
	.allreduce_start = mpi_allreduce_start,
	.allreduce_wait = mpi_allreduce_wait,
	.reduce_scatter = mpi_reduce_scatter,
	.allgather = mpi_allgather,
	.bcast = mpi_bcast,
	.release = mpi_release,
};

void comm_use_mpi(struct comm *c)
{
	if (c->ops)
		c->ops->release(c);
	struct mpi_plane *p = xcalloc(1, sizeof(*p));
	p->win = MPI_WIN_NULL;
	c->impl = p;
	c->ops = &mpi_ops;
	c->zero_pays = c->local_size == c->size;
}

int comm_init(struct comm *c, int *argc, char ***argv)
{
	memset(c, 0, sizeof(*c));
	/* Multiple: the watchdog thread answers other ranks' roll calls. */
	int provided = 0;
	MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
	/* Errors come back as codes so MPI_CHECK can name the call. */
	MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &c->rank));
	MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &c->size));
	MPI_Comm local;
	MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank,
				      MPI_INFO_NULL, &local));
	MPI_CHECK(MPI_Comm_rank(local, &c->local_rank));
	MPI_CHECK(MPI_Comm_size(local, &c->local_size));
	MPI_CHECK(MPI_Comm_free(&local));
	int len = 0;
	char name[MPI_MAX_PROCESSOR_NAME];
	MPI_CHECK(MPI_Get_processor_name(name, &len));
	snprintf(c->host, sizeof(c->host), "%.63s", name);
	comm_use_mpi(c);
	log_set_identity(c->rank, c->size, c->host);
	if (provided < MPI_THREAD_MULTIPLE)
		log_warn("this MPI offers thread level %d, not MPI_THREAD_MULTIPLE: a collective "
			 "past --comm-timeout cannot name the ranks that are late", provided);
	watchdog_start(c);
	return 0;
}

void comm_finalize(struct comm *c)
{
	if (c->ops)
		c->ops->release(c);
	watchdog_stop();
	MPI_Finalize();
}

int comm_any(struct comm *c, int flag)
{
	int in = flag != 0, out = 0;
	guard(c, "agreement (any)");
	MPI_CHECK(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD));
	unguard();
	return out;
}

int comm_first(struct comm *c, int flag)
{
	int in = flag ? c->rank : c->size, out = 0;
	guard(c, "agreement (first)");
	MPI_CHECK(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
	unguard();
	return out < c->size ? out : -1;
}

void comm_sum_host(struct comm *c, double *buf, int n)
{
	guard(c, "sum");
	MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM,
				MPI_COMM_WORLD));
	unguard();
}

void comm_bcast_host(struct comm *c, void *buf, size_t bytes, int root)
{
	char *p = buf;
	guard(c, "broadcast");
	for (size_t off = 0; off < bytes; off += MPI_CHUNK) {
		size_t len = bytes - off < MPI_CHUNK ? bytes - off : MPI_CHUNK;
		MPI_CHECK(MPI_Bcast(p + off, (int)len, MPI_BYTE, root, MPI_COMM_WORLD));
	}
	unguard();
}

void comm_allgather_host(struct comm *c, const void *mine, void *all, size_t bytes)
{
	guard(c, "all-gather");
	MPI_CHECK(MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
				MPI_COMM_WORLD));
	unguard();
}

void comm_gather_shards(struct comm *c, const float *mine, float *all, size_t n, size_t each,
			int root)
{
	int *counts = xcalloc((size_t)c->size, sizeof(int));
	int *displs = xcalloc((size_t)c->size, sizeof(int));
	shard_counts(c, n, each, counts, displs);
	guard(c, "gather of shards");
	MPI_CHECK(MPI_Gatherv(mine, counts[c->rank], MPI_FLOAT, all, counts, displs, MPI_FLOAT,
			      root, MPI_COMM_WORLD));
	unguard();
	free(counts);
	free(displs);
}

void comm_scatter_shards(struct comm *c, const float *all, float *mine, size_t n, size_t each,
			 int root)
{
	int *counts = xcalloc((size_t)c->size, sizeof(int));
	int *displs = xcalloc((size_t)c->size, sizeof(int));
	shard_counts(c, n, each, counts, displs);
	guard(c, "scatter of shards");
	MPI_CHECK(MPI_Scatterv(all, counts, displs, MPI_FLOAT, mine, counts[c->rank], MPI_FLOAT,
			       root, MPI_COMM_WORLD));
	unguard();
	free(counts);
	free(displs);
}

void comm_barrier(struct comm *c)
{
	guard(c, "barrier");
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	unguard();
}

_Noreturn void comm_abort(struct comm *c, int status)
{
	fflush(stdout);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, status);
	exit(status);
}

int comm_user_errors(struct comm *c)
{
	int first = comm_first(c, user_error_pending());
	if (first < 0)
		return 0;
	if (first == c->rank) {
		/* Rank 0's view is the job's; another rank's names itself. */
		log_error_line(first > 0, "%s", user_error_text());
	}
	return 1;
}

char *comm_gather_text(struct comm *c, const char *mine, int root)
{
	int len = (int)strlen(mine), *lens = NULL, *displs = NULL;
	char *all = NULL;
	if (c->rank == root)
		lens = xcalloc((size_t)c->size, sizeof(int));
	guard(c, "gather");
	MPI_CHECK(MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, root, MPI_COMM_WORLD));
	if (c->rank == root) {
		displs = xcalloc((size_t)c->size, sizeof(int));
		size_t total = 0;
		for (int r = 0; r < c->size; r++) {
			displs[r] = (int)total;
			total += (size_t)lens[r];
		}
		all = xcalloc(total + 1, 1);
	}
	MPI_CHECK(MPI_Gatherv(mine, len, MPI_CHAR, all, lens, displs, MPI_CHAR, root,
			      MPI_COMM_WORLD));
	unguard();
	free(lens);
	free(displs);
	return all;
}
