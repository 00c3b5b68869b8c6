/* Shared by the libFuzzer targets: the input as a file (the readers under
 * test open paths) in memory-backed /dev/shm, written afresh per input. */
#pragma once
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "resources.h"
#include "sandbox.h"

/* The memory budget mtrain's main sets (the node's available memory). */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	resources_init(1);
	sandbox_enabled = 0; /* crashes are what a fuzzer looks for: in-process */
	return 0;
}

/* The input files written (one per suffix), removed at exit: each run
 * left its own in /dev/shm. */
static char fuzz_paths[4][128];

static void fuzz_unlink(void)
{
	for (int i = 0; i < 4; i++)
		if (fuzz_paths[i][0])
			unlink(fuzz_paths[i]);
}

/* A file holding data (size bytes), its path in a static buffer. */
static inline const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix)
{
	char path[128];
	snprintf(path, sizeof(path), "/dev/shm/mtrain-fuzz-%ld%s", (long)getpid(), suffix);
	int i = 0;
	while (i < 4 && fuzz_paths[i][0] && strcmp(fuzz_paths[i], path))
		i++;
	if (i == 4)
		abort(); /* more suffixes than kept: a target's bug */
	if (!fuzz_paths[0][0])
		atexit(fuzz_unlink);
	memcpy(fuzz_paths[i], path, sizeof(path));
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	fwrite(data, 1, size, f);
	fclose(f);
	return fuzz_paths[i];
}

/* After each input: no user error carried into the next one. */
static inline void fuzz_reset(void) { user_error_clear(); }
