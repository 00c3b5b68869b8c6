/* The NCCL data plane of the communicator, for device memory. Rank 0 makes
 * the unique id and broadcasts it with MPI; every rank joins one NCCL
 * communicator spanning every GPU of the job. Collectives run on their own
 * stream, ordered after the compute stream with events, so gradient buckets
 * reduce while backward goes on. Every wait polls ncclCommGetAsyncError and
 * gives up after the timeout: ncclCommAbort, a line naming the rank and the
 * operation, then MPI_Abort. No hang without a message. */
#include "comm.h"
#include "backend.h"
#include "comm_plane.h"
#include "cuda_check.h"
#include "log.h"
#include "watchdog.h"

#include <mpi.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#define NCCL_CHECK(call)                                                       \
	do {                                                                   \
		ncclResult_t nccl_check_rc_ = (call);                          \
		if (nccl_check_rc_ != ncclSuccess && nccl_check_rc_ != ncclInProgress) \
			check_fail("NCCL", #call, ncclGetErrorString(nccl_check_rc_), \
				   __FILE__, __LINE__);                        \
	} while (0)

struct nccl_state {
	ncclComm_t comm;
	cudaStream_t compute;   /* the backend's */
	cudaStream_t stream;    /* collectives */
	cudaEvent_t computed;   /* compute stream reached a bucket */
	cudaEvent_t reduced;    /* collectives done */
	float *gathered;        /* (room) allgather's landing when n is short of
				 * size * each, or NULL */
	size_t room;
};

/* Gives up on a collective: say who and what first (the abort itself may
 * block on a wedged device), then abort NCCL, then MPI. */
static _Noreturn void give_up(struct comm *c, struct nccl_state *s, const char *op,
			      const char *why)
{
	/* Who is not there: the others' last steps, asked over MPI (their
	 * watchdog threads answer while their main threads wait). */
	char late[2048];
	watchdog_roll_call(c, late, sizeof(late));
	log_error_line(1, "NCCL %s %s; not in it: %s; aborting the job", op, why, late);
	ncclCommAbort(s->comm);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

/* Polls until the communicator has no operation in progress (a non-blocking
 * communicator returns ncclInProgress from its calls). */
static void settle(struct comm *c, struct nccl_state *s, const char *op)
{
	double start = log_now();
	for (;;) {
		ncclResult_t e = ncclSuccess;
		NCCL_CHECK(ncclCommGetAsyncError(s->comm, &e));
		if (e == ncclSuccess)
			return;
		if (e != ncclInProgress)
			give_up(c, s, op, ncclGetErrorString(e));
		if (c->timeout > 0 && log_now() - start > c->timeout)
			give_up(c, s, op, "did not complete within --comm-timeout");
	}
}

/* Waits on the host until every collective queued so far has finished. */
static void wait_collectives(struct comm *c, struct nccl_state *s, const char *op)
{
	CUDA_CHECK(cudaEventRecord(s->reduced, s->stream));
	double start = log_now();
	for (;;) {
		cudaError_t q = cudaEventQuery(s->reduced);
		if (q == cudaSuccess)
			break;
		if (q != cudaErrorNotReady)
			CUDA_CHECK(q);
		ncclResult_t e = ncclSuccess;
		NCCL_CHECK(ncclCommGetAsyncError(s->comm, &e));
		if (e != ncclSuccess && e != ncclInProgress)
			give_up(c, s, op, ncclGetErrorString(e));
		if (c->timeout > 0 && log_now() - start > c->timeout)
			give_up(c, s, op, "did not complete within --comm-timeout");
	}
	/* Later compute reads the sums. */
	CUDA_CHECK(cudaStreamWaitEvent(s->compute, s->reduced, 0));
}

/* The collective stream starts only once compute has produced the data. */
static void after_compute(struct nccl_state *s)
{
	CUDA_CHECK(cudaEventRecord(s->computed, s->compute));
	CUDA_CHECK(cudaStreamWaitEvent(s->stream, s->computed, 0));
}

static void nccl_allreduce_start(struct comm *c, float *buf, size_t n)
{
	struct nccl_state *s = c->impl;
	/* A step the timeline records: each all-reduce waited for, so its
	 * span is its own time (not the compute before it). */
	int traced = comm_span_recording(c);
	if (traced) {
		CUDA_CHECK(cudaStreamSynchronize(s->compute));
		comm_span_begin(c, "allreduce");
	}
	after_compute(s);
	NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, s->comm, s->stream));
	settle(c, s, "all-reduce");
	if (traced) {
		watchdog_count(1);
		wait_collectives(c, s, "all-reduce");
		watchdog_count(0);
		comm_span_end(c);
	}
}

static void nccl_allreduce_wait(struct comm *c)
{
	watchdog_count(1);
	wait_collectives(c, c->impl, "all-reduce");
	watchdog_count(0);
}

/* NCCL's blocks are equal: buf has room for size * each (zero past n),
 * and this rank's sum lands in place at its block. */
static void nccl_reduce_scatter(struct comm *c, float *buf, size_t n, size_t each)
{
	struct nccl_state *s = c->impl;
	(void)n;
	comm_span_begin(c, "reduce-scatter");
	after_compute(s);
	watchdog_count(1);
	NCCL_CHECK(ncclReduceScatter(buf, buf + (size_t)c->rank * each, each, ncclFloat, ncclSum,
				     s->comm, s->stream));
	settle(c, s, "reduce-scatter");
	wait_collectives(c, s, "reduce-scatter");
	watchdog_count(0);
	comm_span_end(c);
}

/* In place when the blocks fill n exactly; else (the last block is short,
 * and what follows n in buf must stay) through the plane's own buffer.
 * NCCL's receive buffer is the whole (rank i's block lands at i * each):
 * in place is send == land + rank * each. */
static void nccl_allgather(struct comm *c, float *buf, size_t n, size_t each)
{
	struct nccl_state *s = c->impl;
	size_t all = (size_t)c->size * each;
	float *land = buf;
	if (all != n) {
		if (s->room < all) {
			CUDA_CHECK(cudaFree(s->gathered));
			CUDA_CHECK(cudaMalloc((void **)&s->gathered, all * sizeof(float)));
			s->room = all;
		}
		land = s->gathered;
	}
	comm_span_begin(c, "all-gather");
	after_compute(s);
	watchdog_count(1);
	NCCL_CHECK(ncclAllGather(buf + (size_t)c->rank * each, land, each, ncclFloat, s->comm,
				 s->stream));
	settle(c, s, "all-gather");
	if (land != buf)
		CUDA_CHECK(cudaMemcpyAsync(buf, land, n * sizeof(float), cudaMemcpyDeviceToDevice,
					   s->stream));
	wait_collectives(c, s, "all-gather");
	watchdog_count(0);
	comm_span_end(c);
}

static void nccl_bcast(struct comm *c, float *buf, size_t n, int root)
{
	struct nccl_state *s = c->impl;
	after_compute(s);
	watchdog_count(1);
	NCCL_CHECK(ncclBroadcast(buf, buf, n, ncclFloat, root, s->comm, s->stream));
	settle(c, s, "broadcast");
	wait_collectives(c, s, "broadcast");
	watchdog_count(0);
}

static void nccl_release(struct comm *c)
{
	struct nccl_state *s = c->impl;
	if (!s)
		return;
	/* Finalize flushes outstanding work; it too may hang, so it is waited
	 * on like any collective. */
	NCCL_CHECK(ncclCommFinalize(s->comm));
	settle(c, s, "shutdown");
	NCCL_CHECK(ncclCommDestroy(s->comm));
	CUDA_CHECK(cudaEventDestroy(s->computed));
	CUDA_CHECK(cudaEventDestroy(s->reduced));
	CUDA_CHECK(cudaStreamDestroy(s->stream));
	CUDA_CHECK(cudaFree(s->gathered));
	free(s);
}

/* One NCCL communicator over every rank's GPU, ordered against be's
 * compute stream. */
static void *nccl_start(struct comm *c, const struct backend *be)
{
	struct nccl_state *s = xcalloc(1, sizeof(*s));
	s->compute = (cudaStream_t)be->stream(be);
	ncclUniqueId id;
	if (c->rank == 0)
		NCCL_CHECK(ncclGetUniqueId(&id));
	comm_bcast_host(c, &id, sizeof(id), 0);
	/* Non-blocking, so that a rank that never joins times out with a message. */
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	config.blocking = 0;
	NCCL_CHECK(ncclCommInitRankConfig(&s->comm, c->size, id, c->rank, &config));
	settle(c, s, "communicator start-up");
	CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
	CUDA_CHECK(cudaEventCreateWithFlags(&s->computed, cudaEventDisableTiming));
	CUDA_CHECK(cudaEventCreateWithFlags(&s->reduced, cudaEventDisableTiming));
	c->zero_pays = 1;
	return s;
}

const struct comm_ops comm_nccl_plane = {
	.name = "nccl",
	.allreduce_start = nccl_allreduce_start,
	.allreduce_wait = nccl_allreduce_wait,
	.reduce_scatter = nccl_reduce_scatter,
	.allgather = nccl_allgather,
	.bcast = nccl_bcast,
	.start = nccl_start,
	.release = nccl_release,
};
