/* The test faults of fault.h. */
#include "fault.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void fault_read(struct test_fault *f)
{
	memset(f, 0, sizeof(*f));
	const char *env = getenv("MTRAIN_TEST_FAULT");
	f->rank = -1;
	if (env && sscanf(env, "%7[a-z]:%d:%ld", f->kind, &f->rank, &f->step) != 3)
		f->rank = -1;
}

void fault_after_step(const struct test_fault *f, const struct backend *be, float *w, int rank,
		      long step)
{
	if (f->rank != rank || f->step != step)
		return;
	if (!strcmp(f->kind, "crash"))
		raise(SIGSEGV);
	if (!strcmp(f->kind, "hang"))
		sleep(30); /* alive, outside any collective */
	if (!strcmp(f->kind, "pause"))
		sleep(2);
	if (strcmp(f->kind, "flip"))
		return;
	float v;
	unsigned bits;
	be->copy_out(be, &v, w, sizeof(v));
	memcpy(&bits, &v, sizeof(bits));
	bits ^= 1u;
	memcpy(&v, &bits, sizeof(v));
	be->copy_in(be, w, &v, sizeof(v));
}

int fault_holds_last(const struct test_fault *f, int rank, int sharded, int last)
{
	return sharded ? last : rank == f->rank;
}

void fault_nan_grad(struct test_fault *f, const struct backend *be, float *g, size_t n,
		    int holds_last, long step)
{
	if (f->fired || f->rank < 0 || f->step != step || strcmp(f->kind, "nangrad"))
		return;
	f->fired = 1; /* on every rank: the retry is clean */
	if (!holds_last || n == 0)
		return;
	float v = NAN;
	be->copy_in(be, g + n - 1, &v, sizeof(v));
}
