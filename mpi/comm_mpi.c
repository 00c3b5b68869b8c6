/* The MPI implementation of the communicator: start-up, rank discovery, the
 * host-memory data plane and the control plane every data plane shares. */
#include "comm.h"
#include "check.h"
#include "log.h"
#include "params.h"
#include "timeline.h"
#include "watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
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
	/* Every rank on one node: one shared-memory file, after its first
	 * page (SHM_HEAD) a segment per rank, each holding two generations
	 * (phases alternate between them, so a rank never overwrites what a
	 * slower one still reads from the previous phase) of [size * chunk:
	 * reduce-scatter staging, a piece of each rank's shard][chunk:
	 * all-gather, a piece of its own]. Large buffers go a chunk of each
	 * shard at a time. */
	void *map;       /* the segments, mapped here; NULL until the first call */
	size_t map_bytes;
	float **seg;     /* (size) each rank's segment in map */
	size_t chunk;    /* values of a shard per phase */
	unsigned phases; /* phases so far: the generation's parity */
	int no_shm;      /* the segments could not be made: MPI's collectives */
	const float **in; /* (size) the pieces a reduce-scatter sums, in rank order */
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

/* Every rank passes: stores before it are seen by loads after it, in
 * every segment. */
static void shm_barrier(struct mpi_plane *p)
{
	(void)p;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void shm_free(struct mpi_plane *p)
{
	if (!p->map)
		return;
	munmap(p->map, p->map_bytes);
	free(p->seg);
	p->map = NULL;
	p->seg = NULL;
}

/* Each rank's segment, whatever the model and the ranks: 2 (size + 1)
 * chunks, each chunk a shard's values per phase (32 MiB on a node of 8). */
#define SHM_BYTES ((size_t)4 << 20)

/* The first page of the mapping: rank 0's mark, which each rank checks
 * (the file /proc/PID/fd/FD named is rank 0's object and no other). */
#define SHM_HEAD 4096

/* Rank 0 creates the segments as an anonymous shared-memory file
 * (memfd_create: no name in /dev/shm, so nothing is left behind however the
 * job ends), its pages allocated up front (posix_fallocate: too little
 * memory fails here, not as a SIGBUS in a later step); the other ranks open
 * it through /proc/PID/fd/FD. Returns 0, or -1 on every rank when any rank
 * could not, with the first such rank in *bad_rank and its errno in
 * *bad_err. Inside the caller's guard: plain MPI calls.
 * MTRAIN_TEST_FAULT=shm:RANK fails RANK's mapping, for tests. */
static int shm_map(struct comm *c, struct mpi_plane *p, size_t bytes, int *bad_rank,
		   int *bad_err)
{
	/* Rank 0's pid, fd, errno (0: made) and mark. */
	long long made[4] = {getpid(), -1, 0, 0};
	if (c->rank == 0) {
		int fd = memfd_create("mtrain-zero", MFD_CLOEXEC);
		int err = fd < 0 ? errno : posix_fallocate(fd, 0, (off_t)bytes);
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		made[1] = fd;
		made[2] = err;
		made[3] = (long long)t.tv_nsec ^ ((long long)t.tv_sec << 20) ^ made[0];
	}
	MPI_CHECK(MPI_Bcast(made, 4, MPI_LONG_LONG, 0, MPI_COMM_WORLD));
	int fd = c->rank == 0 ? (int)made[1] : -1, err = (int)made[2];
	if (c->rank != 0 && !err) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%lld/fd/%lld", made[0], made[1]);
		fd = open(path, O_RDWR | O_CLOEXEC);
		err = fd < 0 ? errno : 0;
	}
	const char *fault = getenv("MTRAIN_TEST_FAULT");
	int at;
	if (!err && fault && sscanf(fault, "shm:%d", &at) == 1 && at == c->rank)
		err = EACCES;
	void *map = MAP_FAILED;
	if (!err) {
		map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		err = map == MAP_FAILED ? errno : 0;
	}
	if (!err && c->rank == 0)
		memcpy(map, &made[3], sizeof(made[3]));
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); /* the mark is written */
	if (!err && memcmp(map, &made[3], sizeof(made[3])))
		err = ESTALE; /* another process's file under that pid and fd */
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); /* every rank checked it */
	if (fd >= 0)
		close(fd);
	/* The lowest failing rank and its errno. */
	int mine[2] = {err ? c->rank : c->size, err}, first[2];
	MPI_CHECK(MPI_Allreduce(mine, first, 1, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD));
	if (first[0] < c->size) {
		if (map != MAP_FAILED)
			munmap(map, bytes);
		*bad_rank = first[0];
		MPI_CHECK(MPI_Bcast(&err, 1, MPI_INT, first[0], MPI_COMM_WORLD));
		*bad_err = err;
		return -1;
	}
	p->map = map;
	p->map_bytes = bytes;
	return 0;
}

/* The segments for shards of each values (collective on the first call and
 * whenever the chunk changes). 0, or -1 on every rank when a rank could
 * not have them (no memory, or no way to open rank 0's file): MPI serves
 * instead, for the rest of the run. */
static int shm_reserve(struct comm *c, struct mpi_plane *p, size_t each)
{
	if (p->no_shm)
		return -1;
	size_t most = SHM_BYTES / (2 * ((size_t)c->size + 1) * sizeof(float));
	most = most < PARAM_ALIGN ? PARAM_ALIGN : most;
	size_t chunk = each < most ? (each ? each : 1) : most;
	if (p->map && p->chunk == chunk)
		return 0;
	shm_free(p);
	p->chunk = chunk;
	/* Each rank's segment starts on a page of its own. */
	size_t per = (2 * ((size_t)c->size + 1) * chunk * sizeof(float) + 4095) / 4096 * 4096;
	int bad_rank, bad_err;
	if (shm_map(c, p, SHM_HEAD + per * (size_t)c->size, &bad_rank, &bad_err)) {
		p->no_shm = 1;
		log_warn("ZeRO-1: no shared memory for the reduce-scatter and all-gather (%zu KiB; "
			 "rank %d: %s): using MPI's collectives, which are slower (the same sums)",
			 (SHM_HEAD + per * (size_t)c->size) / 1024, bad_rank, strerror(bad_err));
		return -1;
	}
	p->seg = xcalloc((size_t)c->size, sizeof(float *));
	for (int r = 0; r < c->size; r++)
		p->seg[r] = (float *)((char *)p->map + SHM_HEAD + per * (size_t)r);
	return 0;
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

/* out[0, len) = in[0] + in[1] + ... + in[ranks - 1], added in rank order:
 * the same bits whichever plane brought the pieces. out may be one of in
 * (each block is read whole before it is written). */
static void sum_in_rank_order(float *out, const float *const *in, int ranks, size_t len)
{
	float sum[SUM_BLOCK];
	for (size_t b = 0; b < len; b += SUM_BLOCK) {
		size_t m = len - b < SUM_BLOCK ? len - b : SUM_BLOCK;
		memcpy(sum, in[0] + b, m * sizeof(float));
		for (int q = 1; q < ranks; q++) {
			const float *restrict x = in[q] + b;
			for (size_t i = 0; i < m; i++)
				sum[i] += x[i];
		}
		memcpy(out + b, sum, m * sizeof(float));
	}
}

static void shm_reduce_scatter(struct comm *c, struct mpi_plane *p, float *buf, size_t n,
			       size_t each)
{
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
		for (int q = 0; q < c->size; q++)
			p->in[q] = q == c->rank ? buf + at
						: shm_gen(c, p, q, phase) + (size_t)c->rank * chunk;
		sum_in_rank_order(buf + at, p->in, c->size, len);
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
		size_t len, at = piece(c, n, each, c->rank, off, chunk, &len);
		for (int q = 0; q < c->size; q++) {
			size_t qlen, qat = piece(c, n, each, q, off, chunk, &qlen);
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

static void shm_allgather(struct comm *c, struct mpi_plane *p, float *buf, size_t n, size_t each)
{
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

/* Shared memory when every rank is on this node (3 to 4 times faster than
 * MPI's collectives here: jobs/bench_collectives), else MPI's. */
static int use_shm(struct comm *c, struct mpi_plane *p, size_t each)
{
	return c->local_size == c->size && shm_reserve(c, p, each) == 0;
}

static void mpi_reduce_scatter(struct comm *c, float *buf, size_t n, size_t each)
{
	struct mpi_plane *p = c->impl;
	mpi_allreduce_wait(c); /* no bucket left pending */
	timeline_begin("reduce-scatter");
	guard(c, "reduce-scatter of gradients");
	if (use_shm(c, p, each))
		shm_reduce_scatter(c, p, buf, n, each);
	else
		a2a_reduce_scatter(c, p, buf, n, each);
	unguard();
	timeline_end();
}

static void mpi_allgather(struct comm *c, float *buf, size_t n, size_t each)
{
	struct mpi_plane *p = c->impl;
	timeline_begin("all-gather");
	guard(c, "all-gather of weights");
	if (use_shm(c, p, each)) {
		shm_allgather(c, p, buf, n, each);
	} else {
		shard_counts(c, n, each, p->counts, p->displs);
		MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, p->counts,
					 p->displs, MPI_FLOAT, MPI_COMM_WORLD));
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
	struct mpi_plane *p = c->impl;
	shm_free(p);
	free(p->scratch);
	free(p->counts);
	free(p->displs);
	free(p->rcounts);
	free(p->rdispls);
	free(p->in);
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
	p->counts = xcalloc((size_t)c->size, sizeof(int));
	p->displs = xcalloc((size_t)c->size, sizeof(int));
	p->rcounts = xcalloc((size_t)c->size, sizeof(int));
	p->rdispls = xcalloc((size_t)c->size, sizeof(int));
	p->in = xcalloc((size_t)c->size, sizeof(*p->in));
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

/* Checkpoints' shards go point to point, in messages of at most this many
 * values: no count or displacement passes int's range. */
#define SHARD_MSG ((size_t)1 << 28)
#define TAG_SHARD 7301

/* Every rank's shard between its mine and root's all: to root (gather)
 * or from it (scatter). */
static void move_shards(struct comm *c, float *all, float *mine, size_t n, int root, int gather)
{
	struct shard s;
	guard(c, gather ? "gather of shards" : "scatter of shards");
	for (int q = 0; q < c->size; q++) {
		if (c->rank != root && c->rank != q)
			continue;
		shard_plan(&s, n, q, c->size);
		float *at_root = all + s.first;
		if (q == root) {
			if (c->rank == root)
				memcpy(gather ? at_root : mine, gather ? mine : at_root,
				       s.len * sizeof(float));
			continue;
		}
		for (size_t off = 0; off < s.len; off += SHARD_MSG) {
			int len = (int)(s.len - off < SHARD_MSG ? s.len - off : SHARD_MSG);
			float *here = c->rank == root ? at_root + off : mine + off;
			int peer = c->rank == root ? q : root;
			if ((c->rank == root) == gather)
				MPI_CHECK(MPI_Recv(here, len, MPI_FLOAT, peer, TAG_SHARD, MPI_COMM_WORLD,
						   MPI_STATUS_IGNORE));
			else
				MPI_CHECK(MPI_Send(here, len, MPI_FLOAT, peer, TAG_SHARD, MPI_COMM_WORLD));
		}
	}
	unguard();
}

void comm_gather_shards(struct comm *c, const float *mine, float *all, size_t n, size_t each,
			int root)
{
	(void)each; /* shard_plan derives it from n and the ranks */
	move_shards(c, all, (float *)mine, n, root, 1);
}

void comm_scatter_shards(struct comm *c, const float *all, float *mine, size_t n, size_t each,
			 int root)
{
	(void)each;
	move_shards(c, (float *)all, mine, n, root, 0);
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
