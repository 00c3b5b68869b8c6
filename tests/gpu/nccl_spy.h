/* What the NCCL communicator asked NCCL to do, for tests/gpu/nccl_comm.c:
 * in a CUDA build, nccl_spy.c wraps NCCL's collectives at link time (ld
 * --wrap) and records each call here before passing it on, so even one rank,
 * where every collective is the identity, sees whether a collective was
 * called at all, and on which pointers and counts. */
#pragma once
#include <stddef.h>

enum nccl_spy_op { SPY_ALLREDUCE, SPY_BROADCAST, SPY_REDUCE_SCATTER, SPY_ALLGATHER };

struct nccl_spy_call {
	enum nccl_spy_op op;
	const void *send;
	void *recv;
	size_t count; /* NCCL's count: per rank for reduce-scatter and all-gather */
	int root;     /* broadcast's; -1 otherwise */
};

#define NCCL_SPY_MAX 64
struct nccl_spy {
	struct nccl_spy_call call[NCCL_SPY_MAX];
	int n; /* calls recorded so far (those past NCCL_SPY_MAX are counted only) */
};

/* Defined by the test; filled by nccl_spy.c's wrappers. */
extern struct nccl_spy nccl_spy;
