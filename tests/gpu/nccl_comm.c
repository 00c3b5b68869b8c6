/* The NCCL communicator on device memory, one GPU per rank (run under
 * mpirun with as many ranks as GPUs): all-reduce in buckets, broadcast, and
 * ZeRO-1's reduce-scatter and all-gather (in place, and through the plane's
 * own buffer when the blocks overrun n), checked value by value, with guard
 * values around every buffer that no collective may touch.
 *
 * On one rank (cuda.nccl_comm) every collective is the identity, so the
 * values alone cannot tell a collective that ran from one that was
 * skipped: a link-time spy on NCCL (nccl_spy.c) checks that each plane call
 * made its one NCCL call, on the pointers, offsets and counts NCCL's in-place
 * conventions want. The sums, the broadcast from another rank and the
 * blocks other ranks own are checked on two ranks (cuda.nccl_two_hosts).
 * The inputs arrive by asynchronous copies on the compute stream and the
 * results leave by a device copy on it, so a collective that did not wait
 * for compute, or compute that did not wait for the collective, reads wrong
 * values. Skips (77) without a GPU; fails on a machine with one that this
 * build cannot use (gpu.h). */
#include "comm.h"
#include "gpu.h"
#include "nccl_spy.h"
#include "params.h"
#include "unit.h"

#include <mpi.h>
#include <string.h>

#define N 4000037    /* odd, 16 MB: NCCL chunks it, and a copy takes a while */
#define G 16         /* guard values on either side of every device buffer */
#define GUARD -3.0f  /* what the guards hold, before and after */
#define PAST -7.0f   /* past n in a ZeRO-1 buffer: the all-gather leaves it */

struct nccl_spy nccl_spy;

static const struct backend *be;

/* Call i of the NCCL calls the spy saw since spy_done: op on these
 * pointers and counts. recv NULL: any pointer outside [lo, hi) (the plane's
 * own buffer). */
static void spy_expect(int i, enum nccl_spy_op op, const void *send, const void *recv,
		       size_t count, int root, const float *lo, const float *hi)
{
	EXPECT(i < nccl_spy.n);
	if (i >= nccl_spy.n || i >= NCCL_SPY_MAX)
		return;
	const struct nccl_spy_call *k = &nccl_spy.call[i];
	EXPECT(k->op == op);
	EXPECT(k->send == send);
	if (recv)
		EXPECT(k->recv == recv);
	else
		EXPECT((const float *)k->recv < lo || (const float *)k->recv >= hi);
	EXPECT(k->count == count);
	EXPECT(k->root == root);
}

/* Exactly n NCCL calls since the last spy_done. */
static void spy_done(int n)
{
	if (nccl_spy.n != n)
		fprintf(stderr, "nccl_comm: %d NCCL calls, want %d\n", nccl_spy.n, n);
	EXPECT(nccl_spy.n == n);
	nccl_spy.n = 0;
}

/* h (G + n + G) with GUARD in both guards; the n values are the caller's. */
static void guard(float *h, size_t n)
{
	for (size_t i = 0; i < G; i++)
		h[i] = h[G + n + i] = GUARD;
}

/* Values in h (G + n + G) unlike want's, and guards changed. */
static int wrong_guards(const float *h, size_t n)
{
	int wrong = 0;
	for (size_t i = 0; i < G; i++)
		wrong += (h[i] != GUARD) + (h[G + n + i] != GUARD);
	return wrong;
}

/* Reads the device buffer base (G + n + G) into h through a device copy on
 * the compute stream (into out, as large). */
static void read_back(float *h, float *out, const float *base, size_t n)
{
	size_t bytes = (n + 2 * G) * sizeof(float);
	be->copy(be, out, base, bytes);
	be->copy_out(be, h, out, bytes);
}

/* Two all-reduce buckets started right behind the copy that fills them, back
 * to back, completed by one wait; then the broadcast from the last rank. */
static void check_allreduce_bcast(struct comm *c, float *h, float *dbase, float *obase)
{
	float *d = dbase + G;
	float ranks_sum = (float)c->size * (float)(c->size + 1) / 2.0f;
	guard(h, N);
	for (size_t i = 0; i < N; i++)
		h[G + i] = (float)(c->rank + 1) * (float)(i % 7);
	be->copy_in_async(be, dbase, h, (N + 2 * G) * sizeof(float));
	c->ops->allreduce_start(c, d + N / 2, N - N / 2);
	c->ops->allreduce_start(c, d, N / 2);
	c->ops->allreduce_wait(c);
	spy_expect(0, SPY_ALLREDUCE, d + N / 2, d + N / 2, N - N / 2, -1, NULL, NULL);
	spy_expect(1, SPY_ALLREDUCE, d, d, N / 2, -1, NULL, NULL);
	spy_done(2);
	read_back(h, obase, dbase, N);
	int wrong = wrong_guards(h, N);
	for (size_t i = 0; i < N; i++)
		wrong += h[G + i] != ranks_sum * (float)(i % 7);
	EXPECT(wrong == 0);

	int root = c->size - 1;
	guard(h, N);
	for (size_t i = 0; i < N; i++)
		h[G + i] = c->rank == root ? (float)i : -1.0f;
	be->copy_in_async(be, dbase, h, (N + 2 * G) * sizeof(float));
	c->ops->bcast(c, d, N, root);
	spy_expect(0, SPY_BROADCAST, d, d, N, root, NULL, NULL);
	spy_done(1);
	read_back(h, obase, dbase, N);
	wrong = wrong_guards(h, N);
	for (size_t i = 0; i < N; i++)
		wrong += h[G + i] != (float)i;
	EXPECT(wrong == 0);
}

/* What every rank puts in its block of an all-gather, round k. */
static float gathered_value(size_t i, int k) { return (float)(i % 1000) + 1.0f + 1000.0f * k; }

/* ZeRO-1: a reduce-scatter, then all-gathers, of N values split as
 * shard_plan splits them (blocks padded with zeros to equal length). */
static void check_zero(struct comm *c)
{
	struct shard s;
	shard_plan(&s, N, c->rank, c->size);
	size_t room = (size_t)c->size * s.each, bytes = (room + 2 * G) * sizeof(float);
	size_t mine = (size_t)c->rank * s.each; /* this rank's block */
	float ranks_sum = (float)c->size * (float)(c->size + 1) / 2.0f;
	float *zbase = be->alloc(be, bytes), *hz = be->alloc_host(be, bytes);
	float *z = zbase + G, *zend = zbase + room + 2 * G;
	guard(hz, room);
	for (size_t i = 0; i < room; i++)
		hz[G + i] = i < N ? (float)(c->rank + 1) * (float)(i % 7) : 0.0f;
	be->copy_in_async(be, zbase, hz, bytes);
	c->ops->reduce_scatter(c, z, N, s.each);
	spy_expect(0, SPY_REDUCE_SCATTER, z, z + mine, s.each, -1, NULL, NULL);
	spy_done(1);
	be->copy_out(be, hz, zbase, bytes);
	int wrong = wrong_guards(hz, room);
	for (size_t i = mine; i < mine + s.each; i++)
		wrong += hz[G + i] != (i < N ? ranks_sum * (float)(i % 7) : 0.0f);
	EXPECT(wrong == 0);

	/* Blocks that fill n exactly: in place, NCCL's convention (send at
	 * this rank's block, receive from the start). Round 1: n shorter than
	 * the blocks, through the plane's buffer, twice with other values (so
	 * a call that did not move anything leaves the round before's); past
	 * n stays. Other ranks' blocks start at -1. */
	for (int k = 0; k < 3; k++) {
		size_t n = k == 0 ? room : N - 5;
		guard(hz, room);
		for (size_t i = 0; i < room; i++)
			hz[G + i] = i >= n ? PAST
				    : i >= mine && i < mine + s.each ? gathered_value(i, k) : -1.0f;
		be->copy_in_async(be, zbase, hz, bytes);
		c->ops->allgather(c, z, n, s.each);
		spy_expect(0, SPY_ALLGATHER, z + mine, n == room ? z : NULL,
			   s.each, -1, zbase, zend);
		spy_done(1);
		be->copy_out(be, hz, zbase, bytes);
		wrong = wrong_guards(hz, room);
		for (size_t i = 0; i < room; i++)
			wrong += hz[G + i] != (i < n ? gathered_value(i, k) : PAST);
		if (wrong)
			fprintf(stderr, "nccl_comm: all-gather of %zu in blocks of %zu: %d wrong\n", n,
				s.each, wrong);
		EXPECT(wrong == 0);
	}
	be->free(be, zbase);
	be->free_host(be, hz);
}

int main(int argc, char **argv)
{
	struct comm c;
	comm_init(&c, &argc, &argv);
	const char *why = "";
	int fatal = 0;
	be = backend_cuda_open(c.local_rank, c.local_size, &why, &fatal);
	int skip = comm_any(&c, be == NULL);
	if (skip) {
		int status = gpu_skip_status(why, fatal);
		if (c.rank == 0)
			gpu_skip_say("nccl_comm", why, status);
		comm_finalize(&c);
		return status;
	}
	c.timeout = 60.0;
	comm_attach_device(&c, be);
	EXPECT(!strcmp(c.ops->name, "nccl"));
	size_t bytes = (N + 2 * G) * sizeof(float);
	float *h = be->alloc_host(be, bytes), *dbase = be->alloc(be, bytes);
	float *obase = be->alloc(be, bytes);
	nccl_spy.n = 0;
	check_allreduce_bcast(&c, h, dbase, obase);
	check_zero(&c);
	if (c.rank == 0)
		printf("nccl_comm: %d ranks\n", c.size);
	be->free(be, dbase);
	be->free(be, obase);
	be->free_host(be, h);
	/* Back to the MPI data plane (before the stream NCCL ordered itself
	 * against is gone), then the backend closed: the MPI plane must serve
	 * again, and the agreement below runs on it. */
	comm_detach_device(&c);
	EXPECT(!strcmp(c.ops->name, "mpi"));
	backend_close(be);
	int status = unit_done("nccl_comm");
	int any_bad = comm_any(&c, status != 0);
	float sum = 1.0f;
	c.ops->allreduce_start(&c, &sum, 1);
	c.ops->allreduce_wait(&c);
	any_bad |= sum != (float)c.size;
	comm_finalize(&c);
	return any_bad;
}
