/* After ema_sync every rank's shadows equal rank 0's, bitwise; before it,
 * only rank 0 (the owner) has moved them. Run under mpirun with 2+ ranks. */
#include "comm.h"
#include "ema.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 1000

int main(int argc, char **argv)
{
	struct comm c;
	comm_init(&c, &argc, &argv);
	const struct backend *be = backend_cpu();
	float *w = be->alloc(N * sizeof(float));
	for (int i = 0; i < N; i++)
		w[i] = (float)(i % 17) * 0.25f;
	struct ema e;
	ema_init(&e, be, w, N, 0.99f, 1, c.rank == 0);
	/* Each rank's weights differ, so a shadow that was not synced shows. */
	for (int step = 1; step <= 5; step++) {
		for (int i = 0; i < N; i++)
			w[i] += 0.1f * (float)(c.rank + 1);
		ema_update(&e, w, step);
	}
	float *all = c.rank == 0 ? malloc(sizeof(float) * N * c.size) : NULL;
	int bad = 0;
	for (int phase = 0; phase < 2; phase++) {
		if (phase == 1)
			ema_sync(&e, &c);
		MPI_Gather(e.shadow, N, MPI_FLOAT, all, N, MPI_FLOAT, 0, MPI_COMM_WORLD);
		for (int r = 1; c.rank == 0 && r < c.size; r++) {
			int same = !memcmp(all, all + (size_t)r * N, N * sizeof(float));
			if (same != phase) {
				fprintf(stderr, "FAIL: rank %d shadows %s rank 0's %s the sync\n", r,
					same ? "equal" : "differ from", phase ? "after" : "before");
				bad = 1;
			}
		}
	}
	MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (c.rank == 0)
		printf("ema_sync: %d ranks, shadows %s after the sync\n", c.size,
		       bad ? "WRONG" : "bitwise equal");
	free(all);
	ema_free(&e);
	be->free(w);
	comm_finalize(&c);
	return bad;
}
