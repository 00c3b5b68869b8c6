/* Faults a test injects into a training run (MTRAIN_TEST_FAULT=KIND:RANK:STEP),
 * so the reliability tests inject them for real: after STEP on rank RANK,
 * "flip" one bit of the first weight (for --check-replicas to find),
 * "crash" (SIGSEGV, which must end the job at once) or "hang" (alive for
 * 30 s outside any collective). The readers' own fault ("reader") is read
 * by io/sandbox.c. */
#pragma once

#include "backend.h"

struct test_fault {
	char kind[8];  /* "flip", "crash", "hang"; "" for none */
	int rank;      /* -1 for none */
	long step;
};

/* From the environment; none when unset or not KIND:RANK:STEP. */
void fault_read(struct test_fault *f);
/* Injects f when this is its rank and step; w (backend memory) is the
 * weights. */
void fault_inject(const struct test_fault *f, const struct backend *be, float *w, int rank,
		  long step);
