/* The backend registry: maps --device to an implementation, and the shared
 * helpers of check.h. */
#include "backend.h"
#include "check.h"
#include "log.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void check_fail(const char *lib, const char *call, const char *detail,
			  const char *file, int line)
{
	fprintf(stderr, "mtrain: %s error: %s failed (%s) at %s:%d on rank %d (%s)\n",
		lib, call, detail, file, line, log_rank(), log_host());
	fflush(stderr);
	int inited = 0;
	MPI_Initialized(&inited);
	if (inited)
		MPI_Abort(MPI_COMM_WORLD, 1);
	abort();
}

const char *mpi_error_text(int rc)
{
	static char text[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
		snprintf(text, sizeof(text), "MPI error %d", rc);
	return text;
}

void *xmalloc(size_t bytes)
{
	void *p = malloc(bytes ? bytes : 1);
	ALLOC_CHECK(p);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	ALLOC_CHECK(p);
	return p;
}

const struct backend *backend_select(enum device_kind want, const char **why)
{
	const struct backend *cuda = backend_cuda_if_available(why);
	if (want == DEVICE_CUDA)
		return cuda;
	if (want == DEVICE_AUTO && cuda)
		return cuda;
	return backend_cpu();
}
