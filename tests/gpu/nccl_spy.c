/* Link-time wrappers (ld --wrap=ncclAllReduce ...) of the NCCL collectives
 * mpi/comm_nccl.c calls: each is recorded in nccl_spy (nccl_spy.h), then
 * NCCL's own runs. Linked into nccl_comm in CUDA builds only. */
#include "nccl_spy.h"

#include <nccl.h>

static void spy_record(enum nccl_spy_op op, const void *send, void *recv, size_t count, int root)
{
	if (nccl_spy.n < NCCL_SPY_MAX)
		nccl_spy.call[nccl_spy.n] = (struct nccl_spy_call){op, send, recv, count, root};
	nccl_spy.n++;
}

ncclResult_t __real_ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
				  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t __wrap_ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
				  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	spy_record(SPY_ALLREDUCE, send, recv, count, -1);
	return __real_ncclAllReduce(send, recv, count, type, op, comm, stream);
}

ncclResult_t __real_ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type,
				  int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t __wrap_ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type,
				  int root, ncclComm_t comm, cudaStream_t stream)
{
	spy_record(SPY_BROADCAST, send, recv, count, root);
	return __real_ncclBroadcast(send, recv, count, type, root, comm, stream);
}

ncclResult_t __real_ncclReduceScatter(const void *send, void *recv, size_t count,
				      ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
				      cudaStream_t stream);
ncclResult_t __wrap_ncclReduceScatter(const void *send, void *recv, size_t count,
				      ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
				      cudaStream_t stream)
{
	spy_record(SPY_REDUCE_SCATTER, send, recv, count, -1);
	return __real_ncclReduceScatter(send, recv, count, type, op, comm, stream);
}

ncclResult_t __real_ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t type,
				  ncclComm_t comm, cudaStream_t stream);
ncclResult_t __wrap_ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t type,
				  ncclComm_t comm, cudaStream_t stream)
{
	spy_record(SPY_ALLGATHER, send, recv, count, -1);
	return __real_ncclAllGather(send, recv, count, type, comm, stream);
}
