/* Shared by the GPU test programs: open the CUDA backend or exit with
 * CTest's skip code (77) saying why, so no GPU test passes without a GPU. */
#pragma once
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"

#define SKIP_CODE 77

static inline const struct backend *gpu_or_skip(const char *test, int local_rank, int local_size)
{
	const char *why = "";
	int fatal = 0;
	const struct backend *be = backend_cuda_open(local_rank, local_size, &why, &fatal);
	if (be)
		return be;
	if (fatal) {
		fprintf(stderr, "%s: FAILED: %s\n", test, why);
		exit(1);
	}
	printf("%s: SKIPPED: %s\n", test, why);
	exit(SKIP_CODE);
}
