/* Shared by the GPU test programs: open the CUDA backend, or exit with
 * CTest's skip code (77) where this machine has no GPU, or fail (1) where
 * it has one that could not be opened (a build without CUDA, a driver the
 * runtime refuses, a device that cannot be used), saying why either way. So
 * no GPU test passes without a GPU, and none skips on a machine with one. */
#pragma once
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"

#define SKIP_CODE 77

/* Where this machine shows an NVIDIA GPU, whatever this build or the CUDA
 * runtime make of it: the driver's /proc/driver/nvidia/gpus lists one, or a
 * /dev/nvidiaN exists. NULL when neither. */
static inline const char *gpu_on_machine(void)
{
	DIR *dir = opendir("/proc/driver/nvidia/gpus");
	if (dir) {
		const struct dirent *e;
		int found = 0;
		while (!found && (e = readdir(dir)))
			found = e->d_name[0] != '.';
		closedir(dir);
		if (found)
			return "/proc/driver/nvidia/gpus lists one";
	}
	static char dev[32];
	for (int i = 0; i < 16; i++) {
		snprintf(dev, sizeof(dev), "/dev/nvidia%d", i);
		if (access(dev, F_OK) == 0)
			return dev;
	}
	return NULL;
}

/* The exit status for a test that got no backend, with backend_cuda_open's
 * why and fatal: SKIP_CODE where the machine has no GPU, 1 otherwise. */
static inline int gpu_skip_status(const char *why, int fatal)
{
	(void)why;
	return fatal || gpu_on_machine() ? 1 : SKIP_CODE;
}

/* The one line saying why test skips (stdout) or fails (stderr). */
static inline void gpu_skip_say(const char *test, const char *why, int status)
{
	const char *gpu = gpu_on_machine();
	if (status == SKIP_CODE)
		printf("%s: SKIPPED: no GPU on this machine; %s\n", test, why);
	else if (gpu)
		fprintf(stderr, "%s: FAILED: this machine has a GPU (%s), but %s\n", test, gpu, why);
	else
		fprintf(stderr, "%s: FAILED: %s\n", test, why);
}

static inline const struct backend *gpu_or_skip(const char *test, int local_rank, int local_size)
{
	const char *why = "";
	int fatal = 0;
	const struct backend *be = backend_cuda_open(local_rank, local_size, &why, &fatal);
	if (be)
		return be;
	int status = gpu_skip_status(why, fatal);
	gpu_skip_say(test, why, status);
	exit(status);
}
