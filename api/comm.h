/* The communicator interface. The data plane (all-reduce, broadcast of
 * parameter-sized buffers in backend memory) goes through a table of function
 * pointers: MPI on host memory, NCCL on device memory; comm.c alone knows
 * which planes a build has and picks one. The control plane (agreement on
 * flags, small host reductions and broadcasts, abort) is always MPI,
 * whatever the data plane is. */
#pragma once
#include <stddef.h>

struct comm;
struct backend;

/* A data plane. Its file fills one of these; comm.c registers it with the
 * memory it serves. */
struct comm_ops {
	const char *name; /* "mpi", "nccl" */
	/* Starts buf (n) = sum of every rank's buf (n), in place, backend
	 * memory. Gradient buckets start as soon as backward has made them
	 * final; the sums are complete only after allreduce_wait. */
	void (*allreduce_start)(struct comm *c, float *buf, size_t n);
	/* Completes every started all-reduce: afterwards the backend's next op
	 * sees the sums. */
	void (*allreduce_wait)(struct comm *c);
	/* ZeRO-1's data plane, blocking, backend memory. buf holds n values
	 * split as shard_plan (shard.h) splits them over c->size ranks, each
	 * per rank; it has room for size * each, zero past n.
	 * reduce_scatter: this rank's shard of buf = its sum over every rank;
	 * the rest of [0, n) is left undefined. */
	void (*reduce_scatter)(struct comm *c, float *buf, size_t n, size_t each);
	/* allgather: buf [0, n) on every rank = each rank's shard of its buf;
	 * nothing past n is written. */
	void (*allgather)(struct comm *c, float *buf, size_t n, size_t each);
	/* buf (n) on every rank = buf (n) on root, backend memory. */
	void (*bcast)(struct comm *c, float *buf, size_t n, int root);
	/* Makes the plane's state for be's memory (be NULL: host memory,
	 * before any backend) and sets c->zero_pays; collective. Returns the
	 * state, which becomes c->impl; until then the plane in use serves. */
	void *(*start)(struct comm *c, const struct backend *be);
	/* Releases c->impl, the state start made. */
	void (*release)(struct comm *c);
};

/* What a module above the communicator gives it to call back (a hook
 * instead of an include): the timeline's spans around each data-plane
 * collective. Each may be NULL (no timeline: nothing recorded). */
struct comm_hooks {
	/* Opens a span of phase (a string literal) now, in the step under way. */
	void (*span_begin)(const char *phase);
	/* Closes the span span_begin opened. */
	void (*span_end)(void);
	/* Whether the step under way is recorded (the NCCL plane then waits
	 * for each all-reduce, so that its span is its own time). */
	int (*recording)(void);
};

struct comm {
	const struct comm_ops *ops;
	int rank, size;             /* in the job, e.g. 1 of 4 */
	int local_rank, local_size; /* on this node, e.g. 1 of 2 */
	char host[64];
	double timeout; /* seconds one collective may take, then the job is
			 * ended with a message (--comm-timeout); 0: no limit */
	_Atomic long step; /* last completed training step, for roll calls */
	int zero_pays;  /* 1: reduce_scatter + allgather beat allreduce
			 * (--zero auto): NCCL, or every rank on one node */
	void *impl; /* the data plane's own state */
	struct comm_hooks hooks; /* zero at comm_init; set by the trainer */
};

/* Starts MPI, fills rank/size/local rank/host with the data plane for
 * host memory (MPI). Returns 0, or aborts through MPI_CHECK. */
int comm_init(struct comm *c, int *argc, char ***argv);
/* Releases the data plane and finalizes MPI. */
void comm_finalize(struct comm *c);
/* Switches the data plane to the one for be's memory (be->memory; be
 * NULL: host memory), releasing the one in use unless it is that one:
 * NCCL for CUDA memory (collective; waits give up after c->timeout
 * seconds), MPI for host memory. Returns 0. */
int comm_attach_device(struct comm *c, const struct backend *be);
/* Back to the data plane for host memory (MPI), releasing a device one
 * (before the backend whose stream it uses is closed). Collective when
 * one is attached. */
void comm_detach_device(struct comm *c);

/* Control plane, collective over every rank. */
/* Returns 1 on every rank if flag is set on any rank. */
int comm_any(struct comm *c, int flag);
/* Returns the lowest rank whose flag is set, or -1 on every rank. */
int comm_first(struct comm *c, int flag);
/* buf (n) = element-wise sum over ranks, in place, host doubles. */
void comm_sum_host(struct comm *c, double *buf, int n);
/* all (size * bytes) = every rank's mine (bytes), in rank order, host memory. */
void comm_allgather_host(struct comm *c, const void *mine, void *all, size_t bytes);
/* Rank root's all (n) = every rank's shard of it (mine: its len values,
 * shard_plan's split with each per rank), host floats. */
void comm_gather_shards(struct comm *c, const float *mine, float *all, size_t n, size_t each,
			int root);
/* Every rank's mine (its shard's len values) = its shard of root's all. */
void comm_scatter_shards(struct comm *c, const float *all, float *mine, size_t n, size_t each,
			 int root);
/* bytes of buf on root copied to every rank, host memory. */
void comm_bcast_host(struct comm *c, void *buf, size_t bytes, int root);
void comm_barrier(struct comm *c);
/* Rank root gets every rank's text, concatenated in rank order (malloc'd);
 * the others NULL. Up to 2 GB in all. */
char *comm_gather_text(struct comm *c, const char *mine, int root);
/* Aborts every rank with the given exit status. Never returns. */
_Noreturn void comm_abort(struct comm *c, int status);

/* The user-error convention: collective. If any rank recorded a user_error,
 * the lowest such rank prints its one line and every rank returns 1 (the
 * caller then finalizes and exits with EXIT_USER). Returns 0 otherwise. */
int comm_user_errors(struct comm *c);
