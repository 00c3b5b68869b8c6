/* The NCCL communicator on device memory, one GPU per rank (run under
 * mpirun with as many ranks as GPUs): all-reduce in buckets, broadcast, and
 * ZeRO-1's reduce-scatter and all-gather, checked value by value. The inputs arrive by asynchronous copies on the
 * compute stream and the results leave by a device copy on it, so a
 * collective that did not wait for compute, or compute that did not wait
 * for the collective, reads wrong values. Skips (77) without a GPU. */
#include "comm.h"
#include "gpu.h"
#include "params.h"
#include "unit.h"

#include <mpi.h>
#include <string.h>

#define N 4000037 /* odd, 16 MB: NCCL chunks it, and a copy takes a while */

int main(int argc, char **argv)
{
	struct comm c;
	comm_init(&c, &argc, &argv);
	const char *why = "";
	int fatal = 0;
	const struct backend *be = backend_cuda_open(c.local_rank, c.local_size, &why, &fatal);
	int skip = comm_any(&c, be == NULL);
	if (skip) {
		if (c.rank == 0)
			printf("nccl_comm: %s: %s\n", fatal ? "FAILED" : "SKIPPED", why);
		comm_finalize(&c);
		return fatal ? 1 : SKIP_CODE;
	}
	c.timeout = 60.0;
	comm_attach_device(&c, be);
	EXPECT(!strcmp(c.ops->name, "nccl"));
	size_t bytes = N * sizeof(float);
	float *h = be->alloc_host(be, bytes), *d = be->alloc(be, bytes), *out = be->alloc(be, bytes);
	for (size_t i = 0; i < N; i++)
		h[i] = (float)(c.rank + 1) * (float)(i % 7);
	/* Two buckets, started right behind the copy that fills them, back to
	 * back, completed by one wait; then read on the compute stream. */
	be->copy_in_async(be, d, h, bytes);
	c.ops->allreduce_start(&c, d + N / 2, N - N / 2);
	c.ops->allreduce_start(&c, d, N / 2);
	c.ops->allreduce_wait(&c);
	be->copy(be, out, d, bytes);
	be->copy_out(be, h, out, bytes);
	float ranks_sum = (float)c.size * (float)(c.size + 1) / 2.0f;
	int wrong = 0;
	for (size_t i = 0; i < N; i++)
		wrong += h[i] != ranks_sum * (float)(i % 7);
	EXPECT(wrong == 0);
	for (size_t i = 0; i < N; i++)
		h[i] = c.rank == 0 ? (float)i : -1.0f;
	be->copy_in_async(be, d, h, bytes);
	c.ops->bcast(&c, d, N, 0);
	be->copy(be, out, d, bytes);
	be->copy_out(be, h, out, bytes);
	wrong = 0;
	for (size_t i = 0; i < N; i++)
		wrong += h[i] != (float)i;
	EXPECT(wrong == 0);
	/* ZeRO-1: a reduce-scatter, then an all-gather, of N values split as
	 * shard_plan splits them (blocks padded with zeros to equal length);
	 * the all-gather leaves what follows N alone. */
	struct shard s;
	shard_plan(&s, N, c.rank, c.size);
	size_t room = (size_t)c.size * s.each;
	float *z = be->alloc(be, room * sizeof(float)), *hz = be->alloc_host(be, room * sizeof(float));
	for (size_t i = 0; i < room; i++)
		hz[i] = i < N ? (float)(c.rank + 1) * (float)(i % 7) : 0.0f;
	be->copy_in_async(be, z, hz, room * sizeof(float));
	c.ops->reduce_scatter(&c, z, N, s.each);
	be->copy_out(be, hz, z, room * sizeof(float));
	wrong = 0;
	for (size_t i = s.first; i < s.first + s.len; i++)
		wrong += hz[i] != ranks_sum * (float)(i % 7);
	EXPECT(wrong == 0);
	for (size_t i = N; i < room; i++)
		hz[i] = -7.0f; /* past N: must stay */
	be->copy_in(be, z, hz, room * sizeof(float));
	c.ops->allgather(&c, z, N, s.each);
	be->copy_out(be, hz, z, room * sizeof(float));
	wrong = 0;
	for (size_t i = 0; i < room; i++)
		wrong += hz[i] != (i < N ? ranks_sum * (float)(i % 7) : -7.0f);
	EXPECT(wrong == 0);
	be->free(be, z);
	be->free_host(be, hz);
	if (c.rank == 0)
		printf("nccl_comm: %d ranks\n", c.size);
	be->free(be, d);
	be->free(be, out);
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
