/* The MPI data plane's choices for the default model's gradients (P =
 * 269,322 floats, padded to a multiple of the rank count): one all-reduce
 * (today's path) against a reduce-scatter then an all-gather (ZeRO-1's),
 * timed in the same run, median of 5 trials of 1,000 each, on as many ranks
 * as mpirun starts. Checks both sums. For issue 12's choice of data plane.
 *   mpirun -np 2 build/jobs/bench_collectives [FLOATS] */
#include "bench_gemm.h"

#include <mpi.h>

#define TRIALS 5
#define ITERS 1000

/* a (n) = rank + 1 everywhere; after a sum over ranks every value is
 * n_ranks (n_ranks + 1) / 2. 1 when every value is. */
static int summed(const float *a, size_t n, int ranks)
{
	float want = (float)ranks * (float)(ranks + 1) / 2.0f;
	for (size_t i = 0; i < n; i++)
		if (a[i] != want)
			return 0;
	return 1;
}

static void fill(float *a, size_t n, int rank)
{
	for (size_t i = 0; i < n; i++)
		a[i] = (float)(rank + 1);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, ranks, floats = 269322;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	if (argc > 1 && bench_parse_int(argv[1], 1, 1 << 28, &floats)) {
		if (!rank)
			fprintf(stderr, "usage: bench_collectives [FLOATS]\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	int shard = (floats + ranks - 1) / ranks;
	size_t n = (size_t)shard * ranks;
	float *a = bench_rand(n, 0.0f), *b = bench_rand((size_t)shard, 0.0f);
	int ok = 1;
	fill(a, n, rank); /* the check, untimed: one of each */
	MPI_Allreduce(MPI_IN_PLACE, a, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	ok &= summed(a, n, ranks);
	fill(a, n, rank);
	MPI_Reduce_scatter_block(a, b, shard, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allgather(b, shard, MPI_FLOAT, a, shard, MPI_FLOAT, MPI_COMM_WORLD);
	ok &= summed(a, n, ranks);
	double ar[TRIALS], rs[TRIALS];
	for (int t = 0; t < TRIALS; t++) {
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		for (int i = 0; i < ITERS; i++)
			MPI_Allreduce(MPI_IN_PLACE, a, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		double t1 = MPI_Wtime();
		for (int i = 0; i < ITERS; i++) {
			MPI_Reduce_scatter_block(a, b, shard, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
			MPI_Allgather(b, shard, MPI_FLOAT, a, shard, MPI_FLOAT, MPI_COMM_WORLD);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		ar[t] = (t1 - t0) / ITERS * 1e3;
		rs[t] = (MPI_Wtime() - t1) / ITERS * 1e3;
	}
	qsort(ar, TRIALS, sizeof(double), bench_cmp_double);
	qsort(rs, TRIALS, sizeof(double), bench_cmp_double);
	MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!rank)
		printf("collectives ranks %d floats %zu allreduce_ms %.3f reduce_scatter_allgather_ms %.3f "
		       "ratio %.2f sums %s\n", ranks, n, ar[TRIALS / 2], rs[TRIALS / 2],
		       rs[TRIALS / 2] / ar[TRIALS / 2], ok ? "ok" : "WRONG");
	free(a);
	free(b);
	MPI_Finalize();
	return ok ? 0 : 1;
}
