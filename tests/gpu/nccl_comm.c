/* The NCCL communicator on device memory, one GPU per rank (run under
 * mpirun with as many ranks as GPUs): all-reduce in buckets, then broadcast,
 * checked value by value. The inputs arrive by asynchronous copies on the
 * compute stream and the results leave by a device copy on it, so a
 * collective that did not wait for compute, or compute that did not wait
 * for the collective, reads wrong values. Skips (77) without a GPU. */
#include "comm.h"
#include "gpu.h"
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
