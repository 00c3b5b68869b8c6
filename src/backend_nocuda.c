/* Linked instead of cuda/ when this build has no CUDA toolkit: there is no
 * CUDA backend to offer. */
#include "backend.h"

int backend_cuda_devices(void) { return 0; }

const struct backend *backend_cuda_open(int local_rank, int local_size, const char **why,
					int *fatal)
{
	*why = "this mtrain was built without CUDA (no nvcc and NCCL found at configure time)";
	*fatal = 0;
	return NULL;
}
