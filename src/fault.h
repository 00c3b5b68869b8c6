/* Faults a test injects into a training run (MTRAIN_TEST_FAULT=KIND:RANK:STEP),
 * so the reliability tests inject them for real. After STEP on rank RANK:
 * "flip" one bit of the first weight (for --check-replicas to find),
 * "crash" (SIGSEGV, which must end the job at once), "hang" (alive for
 * 30 s outside any collective) or "pause" (2 s, a slow step: time passes
 * for --ckpt-every-min). During STEP's first attempt, "nangrad": a
 * NaN in the summed gradients (a transient fault that the step's skip and
 * retry must absorb). The readers' own fault ("reader") is read by
 * io/sandbox.c. */
#pragma once

#include "backend.h"

#include <stddef.h>

struct test_fault {
	char kind[8];  /* "flip", "crash", "hang", "pause", "nangrad"; "" for none */
	int rank;      /* -1 for none */
	long step;     /* the step that makes global_step STEP, e.g. 7 */
	int fired;     /* nangrad: STEP's first attempt is past */
};

/* From the environment; none when unset or not KIND:RANK:STEP. */
void fault_read(struct test_fault *f);
/* After a step: injects a flip, crash, hang or pause when this is its
 * rank and step; w (backend memory) is the weights. */
void fault_after_step(const struct test_fault *f, const struct backend *be, float *w, int rank,
		      long step);
/* nangrad, between the reduction and the check of step's gradients:
 * at f's step, first attempt only, g[n - 1] (backend memory, the last
 * trainable value's sum) becomes NaN where holds_last says this rank
 * holds that sum (RANK's whole sums; under ZeRO-1 the last shard's owner,
 * whatever RANK). */
void fault_nan_grad(struct test_fault *f, const struct backend *be, float *g, size_t n,
		    int holds_last, long step);
/* Whether this rank holds the sum fault_nan_grad poisons: rank is f's
 * RANK when every rank holds all sums (sharded 0), else this rank's shard
 * ends at the last trainable value (last 1). */
int fault_holds_last(const struct test_fault *f, int rank, int sharded, int last);
