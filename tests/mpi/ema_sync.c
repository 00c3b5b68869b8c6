/* Before ema_sync only rank 0 (the owner) has moved its shadows: every other
 * rank still holds the initial weights. After it, every rank's shadows equal,
 * bitwise, what rank 0 held before the sync (so the owner's copy travelled,
 * not some other rank's). And batchnorm's moving statistics, moved by each
 * rank's own batch, become the mean of the ranks' own with ema_mean_state
 * (what a checkpoint then holds), while the trainable variables stay. Run
 * under mpirun with 2+ ranks. */
#include "comm.h"
#include "ema.h"
#include "model.h"
#include "rng.h"

#include <math.h>

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

/* The moving statistics of a batchnorm model after one step on rows that
 * differ by rank, averaged: 0 when they are the mean of every rank's own. */
static int check_mean_state(struct comm *c)
{
	enum { ROWS = 6, IN = 5 };
	const struct backend *be = backend_cpu();
	struct layer_spec spec[4];
	int n = 0, bad = 0;
	struct model m;
	const int in[3] = {1, 1, IN};
	if (layer_spec_parse("dense:4,batchnorm,relu,dense", "test", spec, 4, &n) ||
	    model_plan(&m, spec, n, in, 3, 1))
		return 1;
	model_alloc(&m, be, ROWS);
	const struct params *reg = &m.reg;
	size_t T = reg->trainable, P = reg->total;
	model_glorot(&m, 9, m.w); /* host memory on the CPU backend */
	struct rng r;
	rng_init(&r, 100 + (uint64_t)c->rank, 1);
	float x[ROWS * IN];
	int32_t y[ROWS] = {0, 1, 2, 0, 1, 2};
	for (int i = 0; i < ROWS * IN; i++)
		x[i] = rng_uniform(&r) * 4.0f - 1.0f + (float)c->rank;
	model_set_batch(&m, x, y, ROWS);
	model_forward(&m, ROWS, 1, 1.0f);
	model_update_state(&m);
	struct ema e;
	ema_init(&e, be, m.w, T, P, 0.99f, 1, c->rank == 0);
	float *own = malloc(sizeof(float) * P), *all = malloc(sizeof(float) * P * c->size);
	memcpy(own, m.w, sizeof(float) * P);
	MPI_Allgather(own, (int)P, MPI_FLOAT, all, (int)P, MPI_FLOAT, MPI_COMM_WORLD);
	ema_mean_state(&e, m.w, c);
	int apart = 0;
	for (size_t i = T; i < P; i++) {
		double mean = 0;
		for (int k = 0; k < c->size; k++)
			mean += all[(size_t)k * P + i] / c->size;
		apart |= all[i] != all[P + i]; /* the ranks' own differed */
		if (fabs(m.w[i] - mean) > 1e-6 * (1 + fabs(mean)))
			bad = 1;
	}
	if (memcmp(m.w, own, sizeof(float) * T) || !apart || reg->n != 8 || P - T < 8)
		bad = 1;
	if (bad)
		fprintf(stderr, "FAIL: rank %d: moving statistics are not the mean of the ranks' "
				"own (or trainables moved, or the ranks' own were equal)\n", c->rank);
	free(own);
	free(all);
	ema_free(&e);
	model_free(&m);
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
	ema_init(&e, be, w, N, N, 0.99f, 1, c.rank == 0);
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
	bad |= check_mean_state(&c);
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (c.rank == 0)
		printf("ema_sync: %d ranks, shadows %s\n", c.size,
		       bad ? "WRONG" : "the owner's after the sync, unmoved elsewhere before it; "
				       "moving statistics the mean of the ranks' own");
	free(all);
	free(owner);
	free(initial);
	ema_free(&e);
	be->free(be, w);
	comm_finalize(&c);
	return bad;
}
