/* The MPI data plane's shared-memory staging of comm_shm.h: ZeRO-1's
 * reduce-scatter and all-gather through an anonymous file every rank of the
 * node maps, 3 to 4 times faster than MPI's collectives here
 * (bench/bench_collectives), with the same sums. */
#include "comm_shm.h"
#include "check.h"
#include "log.h"
#include "shard.h"

#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Every rank passes: stores before it are seen by loads after it, in
 * every segment. */
static void shm_barrier(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void shm_free(struct shm_window *w)
{
	if (w->map)
		munmap(w->map, w->map_bytes);
	free(w->seg);
	free(w->in);
	w->map = NULL;
	w->seg = NULL;
	w->in = NULL;
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
static int shm_map(struct comm *c, struct shm_window *w, size_t bytes, int *bad_rank,
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
	w->map = map;
	w->map_bytes = bytes;
	return 0;
}

int shm_reserve(struct comm *c, struct shm_window *w, size_t each)
{
	if (w->no_shm)
		return -1;
	size_t most = SHM_BYTES / (2 * ((size_t)c->size + 1) * sizeof(float));
	most = most < PARAM_ALIGN ? PARAM_ALIGN : most;
	size_t chunk = each < most ? (each ? each : 1) : most;
	if (w->map && w->chunk == chunk)
		return 0;
	shm_free(w);
	w->chunk = chunk;
	/* Each rank's segment starts on a page of its own. */
	size_t per = (2 * ((size_t)c->size + 1) * chunk * sizeof(float) + 4095) / 4096 * 4096;
	int bad_rank, bad_err;
	if (shm_map(c, w, SHM_HEAD + per * (size_t)c->size, &bad_rank, &bad_err)) {
		w->no_shm = 1;
		log_warn("ZeRO-1: no shared memory for the reduce-scatter and all-gather (%zu KiB; "
			 "rank %d: %s): using MPI's collectives, which are slower (the same sums)",
			 (SHM_HEAD + per * (size_t)c->size) / 1024, bad_rank, strerror(bad_err));
		return -1;
	}
	w->seg = xcalloc((size_t)c->size, sizeof(float *));
	w->in = xcalloc((size_t)c->size, sizeof(*w->in));
	for (int r = 0; r < c->size; r++)
		w->seg[r] = (float *)((char *)w->map + SHM_HEAD + per * (size_t)r);
	return 0;
}

/* Rank r's segment in this phase's generation. */
static float *shm_gen(const struct comm *c, const struct shm_window *w, int r, unsigned phase)
{
	return w->seg[r] + (size_t)(phase & 1) * ((size_t)c->size + 1) * w->chunk;
}

size_t shard_piece(const struct comm *c, size_t n, int q, size_t off, size_t chunk, size_t *len)
{
	struct shard s;
	shard_plan(&s, n, q, c->size);
	*len = s.len > off ? (s.len - off < chunk ? s.len - off : chunk) : 0;
	return s.first + off;
}

/* Sums a block of SUM_BLOCK values at a time over the ranks, in rank order,
 * so the running sum stays in L1. */
#define SUM_BLOCK 2048

/* Each block is read whole before it is written: out may be one of in. */
void sum_in_rank_order(float *out, const float *const *in, int ranks, size_t len)
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

void shm_reduce_scatter(struct comm *c, struct shm_window *w, float *buf, size_t n, size_t each)
{
	size_t chunk = w->chunk;
	for (size_t off = 0; off < each; off += chunk) {
		unsigned phase = w->phases++;
		/* Each other rank's piece staged in its slot; this rank's own is
		 * read from buf. */
		float *stage = shm_gen(c, w, c->rank, phase);
		for (int q = 0; q < c->size; q++) {
			size_t len, at = shard_piece(c, n, q, off, chunk, &len);
			if (q != c->rank)
				memcpy(stage + (size_t)q * chunk, buf + at, len * sizeof(float));
		}
		shm_barrier();
		size_t len, at = shard_piece(c, n, c->rank, off, chunk, &len);
		for (int q = 0; q < c->size; q++)
			w->in[q] = q == c->rank ? buf + at
						: shm_gen(c, w, q, phase) + (size_t)c->rank * chunk;
		sum_in_rank_order(buf + at, w->in, c->size, len);
	}
}

void shm_allgather(struct comm *c, struct shm_window *w, float *buf, size_t n, size_t each)
{
	size_t chunk = w->chunk, slot = (size_t)c->size * chunk;
	for (size_t off = 0; off < each; off += chunk) {
		unsigned phase = w->phases++;
		size_t len, at = shard_piece(c, n, c->rank, off, chunk, &len);
		memcpy(shm_gen(c, w, c->rank, phase) + slot, buf + at, len * sizeof(float));
		shm_barrier();
		for (int q = 0; q < c->size; q++) {
			at = shard_piece(c, n, q, off, chunk, &len);
			if (q != c->rank)
				memcpy(buf + at, shm_gen(c, w, q, phase) + slot, len * sizeof(float));
		}
	}
}
