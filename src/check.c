/* The helpers of check.h shared by every library's check macro. */
#include "check.h"
#include "log.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

MT_NORETURN void check_fail(const char *lib, const char *call, const char *detail,
			    const char *file, int line)
{
	char device[32] = "";
	if (log_device() >= 0)
		snprintf(device, sizeof(device), ", GPU %d", log_device());
	fprintf(stderr, "mtrain: %s error: %s failed (%s) at %s:%d on rank %d (%s%s)\n",
		lib, call, detail, file, line, log_rank(), log_host(), device);
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

char *xstrdup(const char *s)
{
	char *p = strdup(s);
	ALLOC_CHECK(p);
	return p;
}
