/* The host data plane's collectives through the communicator (api/comm.h),
 * for a buffer of FLOATS values (default: the default model's 269,322
 * gradients), in the same run: one all-reduce (ZeRO 0's path), the
 * communicator's reduce-scatter then all-gather (ZeRO-1's: shared memory
 * when every rank is on one node, else MPI's), and MPI's own
 * MPI_Reduce_scatter_block + MPI_Allgather as the baseline for the latter.
 * Median of 5 trials; each trial repeats the call for about 0.2 s. Checks
 * the sums of each way's first call, value by value (values that depend on
 * their place: a piece put in the wrong place shows). One line per size:
 *   mpirun -np 2 build/bench/bench_collectives [FLOATS ...] */
#include "bench_gemm.h"
#include "comm.h"
#include "params.h"

#include <mpi.h>

#define TRIALS 5

enum way { ALLREDUCE, ZERO, MPI_RS_AG, WAYS };

static void run(struct comm *c, enum way how, float *a, float *b, size_t n, struct shard *s)
{
	switch (how) {
	case ALLREDUCE:
		c->ops->allreduce_start(c, a, n);
		c->ops->allreduce_wait(c);
		break;
	case ZERO:
		c->ops->reduce_scatter(c, a, n, s->each);
		c->ops->allgather(c, a, n, s->each);
		break;
	default:
		MPI_Reduce_scatter_block(a, b, (int)s->each, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Allgather(b, (int)s->each, MPI_FLOAT, a, (int)s->each, MPI_FLOAT,
			      MPI_COMM_WORLD);
	}
}

/* Milliseconds per call of how, median of TRIALS; *ok cleared when a
 * checked call's sums are wrong. */
static double time_way(struct comm *c, enum way how, float *a, float *b, size_t n,
		       struct shard *s, int *ok)
{
	bench_fill_rank(a, n, c->rank);
	run(c, how, a, b, n, s);
	*ok &= bench_summed(a, 0, s->total, c->size);
	/* About 0.2 s a trial, judged from the first call (rank 0's). */
	double t0 = MPI_Wtime();
	run(c, how, a, b, n, s);
	double one = MPI_Wtime() - t0;
	comm_bcast_host(c, &one, sizeof(one), 0);
	int iters = one > 0.2 ? 1 : one < 2e-4 ? 1000 : (int)(0.2 / one);
	double ms[TRIALS];
	for (int t = 0; t < TRIALS; t++) {
		comm_barrier(c);
		t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++)
			run(c, how, a, b, n, s);
		comm_barrier(c);
		ms[t] = (MPI_Wtime() - t0) / iters * 1e3;
	}
	qsort(ms, TRIALS, sizeof(double), bench_cmp_double);
	comm_bcast_host(c, &ms[TRIALS / 2], sizeof(double), 0);
	return ms[TRIALS / 2];
}

int main(int argc, char **argv)
{
	struct comm c;
	comm_init(&c, &argc, &argv);
	int ok = 1, sizes = argc > 1 ? argc - 1 : 1;
	for (int k = 0; k < sizes; k++) {
		int floats = 269322;
		if (argc > 1 && bench_parse_int(argv[k + 1], 1, 1 << 28, &floats)) {
			if (!c.rank)
				fprintf(stderr, "usage: bench_collectives [FLOATS ...]\n");
			comm_abort(&c, 2);
		}
		struct shard s;
		shard_plan(&s, (size_t)floats, c.rank, c.size);
		size_t room = (size_t)c.size * s.each;
		float *a = bench_rand(room, 0.0f), *b = bench_rand(s.each, 0.0f);
		double ms[WAYS];
		for (int w = 0; w < WAYS; w++)
			ms[w] = time_way(&c, (enum way)w, a, b, w == MPI_RS_AG ? room : s.total, &s,
					 &ok);
		ok = !comm_any(&c, !ok);
		if (!c.rank)
			printf("collectives ranks %d nodes_one %d floats %d allreduce_ms %.4f "
			       "zero_rs_ag_ms %.4f mpi_rs_ag_ms %.4f zero_vs_allreduce %.2f "
			       "zero_vs_mpi %.2f sums %s\n", c.size, c.local_size == c.size, floats,
			       ms[ALLREDUCE], ms[ZERO], ms[MPI_RS_AG], ms[ZERO] / ms[ALLREDUCE],
			       ms[ZERO] / ms[MPI_RS_AG], ok ? "ok" : "WRONG");
		free(a);
		free(b);
	}
	comm_finalize(&c);
	return ok ? 0 : 1;
}
