/* The test faults of fault.h. */
#include "fault.h"

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

void fault_inject(const struct test_fault *f, const struct backend *be, float *w, int rank,
		  long step)
{
	if (f->rank != rank || f->step != step)
		return;
	if (!strcmp(f->kind, "crash"))
		raise(SIGSEGV);
	if (!strcmp(f->kind, "hang"))
		sleep(30); /* alive, outside any collective */
	float v;
	unsigned bits;
	be->copy_out(be, &v, w, sizeof(v));
	memcpy(&bits, &v, sizeof(bits));
	bits ^= 1u;
	memcpy(&v, &bits, sizeof(v));
	be->copy_in(be, w, &v, sizeof(v));
}
