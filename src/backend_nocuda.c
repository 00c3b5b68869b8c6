/* Linked instead of cuda/ when this build has no CUDA toolkit: there is no
 * CUDA backend to offer. */
#include "backend.h"

const struct backend *backend_cuda_if_available(const char **why)
{
	if (why)
		*why = "this mtrain was built without CUDA (no nvcc found at configure time)";
	return NULL;
}
