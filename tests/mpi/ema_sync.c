/* Before ema_sync only rank 0 (the owner) has moved its shadows: every other
 * rank still holds the initial weights. After it, every rank's shadows equal,
 * bitwise, what rank 0 held before the sync (so the owner's copy travelled,
 * not some other rank's). Run under mpirun with 2+ ranks. */
#include "comm.h"
#include "ema.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 1000

/* Rank 0: whether every rank's shadows (gathered in all) equal want. */
static int all_equal(const float *all, int size, const float *want, const char *when)
{
	int bad = 0;
	for (int r = 0; r < size; r++)
		if (memcmp(all + (size_t)r * N, want, N * sizeof(float))) {
			fprintf(stderr, "FAIL: rank %d shadows are wrong %s the sync\n", r, when);
			bad = 1;
		}
	return bad;
}

int main(int argc, char **argv)
{
	struct comm c;
	comm_init(&c, &argc, &argv);
	const struct backend *be = backend_cpu();
	float *w = be->alloc(be, N * sizeof(float)), *initial = malloc(sizeof(float) * N);
	for (int i = 0; i < N; i++)
		initial[i] = w[i] = (float)(i % 17) * 0.25f;
	struct ema e;
	ema_init(&e, be, w, N, 0.99f, 1, c.rank == 0);
	/* Each rank's weights differ, so a shadow from the wrong rank shows. */
	for (int step = 1; step <= 5; step++) {
		for (int i = 0; i < N; i++)
			w[i] += 0.1f * (float)(c.rank + 1);
		ema_update(&e, w, step);
	}
	float *all = c.rank == 0 ? malloc(sizeof(float) * N * c.size) : NULL;
	float *owner = malloc(sizeof(float) * N);
	memcpy(owner, e.shadow, sizeof(float) * N);
	int bad = 0;
	MPI_Gather(e.shadow, N, MPI_FLOAT, all, N, MPI_FLOAT, 0, MPI_COMM_WORLD);
	if (c.rank == 0) {
		if (!memcmp(owner, initial, N * sizeof(float))) {
			fprintf(stderr, "FAIL: the owner's shadows never moved\n");
			bad = 1;
		}
		bad |= all_equal(all + N, c.size - 1, initial, "(other ranks, unmoved) before");
	}
	ema_sync(&e, &c);
	MPI_Gather(e.shadow, N, MPI_FLOAT, all, N, MPI_FLOAT, 0, MPI_COMM_WORLD);
	if (c.rank == 0)
		bad |= all_equal(all, c.size, owner, "(the owner's) after");
	MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (c.rank == 0)
		printf("ema_sync: %d ranks, shadows %s\n", c.size,
		       bad ? "WRONG" : "the owner's after the sync, unmoved elsewhere before it");
	free(all);
	free(owner);
	free(initial);
	ema_free(&e);
	be->free(be, w);
	comm_finalize(&c);
	return bad;
}
