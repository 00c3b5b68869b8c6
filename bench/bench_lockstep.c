/* bench_lockstep: what stepping together costs ranks on this machine. Every
 * rank computes the default job's MLP step as bare products
 * (bench_mlp_step.h: the same work on every rank and every step, no data,
 * no optimizer), in ROUNDS rounds of three phases of STEPS steps each:
 *   free     steps back to back, no rank waiting for another;
 *   barrier  each step followed by a barrier: it waits for the slowest
 *            rank's step (a pause of the VM or of the other process);
 *   reduce   each step followed by ZeRO-1's reduce-scatter and all-gather of
 *            the model's gradients through the communicator (api/comm.h).
 * The phases take turns so that a slow spell of the machine falls on each.
 * Rank 0 prints, in ms a step over every rank and step: free (mean, median,
 * 99th percentile, largest), pairmax (each free step's slowest rank, step by
 * step: what lockstep would cost were the steps at the same moments),
 * barrier and its wait, reduce and its collectives. The reduction's sums are
 * checked once (sums ok / WRONG; exit 1 when wrong).
 *
 * usage: mpirun -np N bench_lockstep [ROWS STEPS ROUNDS]   (64 1000 5)
 * bench/lockstep.sh runs it on 1 and 2 ranks and prints the ceiling it sets
 * on 2 ranks' speed-up. */
#include "backend.h"
#include "bench_mlp_step.h"
#include "comm.h"
#include "params.h"

#include <mpi.h>

#define FLOATS 269322 /* the default model's gradients */

enum phase { FREE, BARRIER, REDUCE, PHASES };

/* One reduction of bench_fill_rank's values: the right sums on every rank. */
static int reduced_right(struct comm *c, float *a, size_t n, const struct shard *s)
{
	bench_fill_rank(a, n, c->rank);
	c->ops->reduce_scatter(c, a, n, s->each);
	c->ops->allgather(c, a, n, s->each);
	return !comm_any(c, !bench_summed(a, 0, n, c->size));
}

/* steps steps of phase p; each step's compute time into compute[], the
 * barrier's or collectives' into after[]. */
static void run_phase(struct comm *c, const struct step *st, enum phase p, int steps, float *g,
		      const struct shard *s, double *compute, double *after)
{
	comm_barrier(c);
	for (int i = 0; i < steps; i++) {
		double t0 = bench_now();
		step_run(st);
		double t1 = bench_now();
		if (p == BARRIER)
			comm_barrier(c);
		else if (p == REDUCE) {
			c->ops->reduce_scatter(c, g, FLOATS, s->each);
			c->ops->allgather(c, g, FLOATS, s->each);
		}
		compute[i] = (t1 - t0) * 1e3;
		after[i] = (bench_now() - t1) * 1e3;
	}
}

static double mean(const double *a, size_t n)
{
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += a[i];
	return sum / (double)n;
}

/* the q-quantile of a sorted a of n */
static double quantile(const double *a, size_t n, double q) { return a[(size_t)(q * (double)(n - 1))]; }

int main(int argc, char **argv)
{
	backend_cpu_pick_kernels(argv); /* the kernels mtrain runs */
	struct comm c;
	comm_init(&c, &argc, &argv);
	int rows = 64, steps = 1000, rounds = 5;
	if ((argc != 1 && argc != 4) ||
	    (argc == 4 && (bench_parse_int(argv[1], 1, 1 << 16, &rows) ||
			   bench_parse_int(argv[2], 1, 1 << 20, &steps) ||
			   bench_parse_int(argv[3], 1, 1000, &rounds)))) {
		if (!c.rank)
			fprintf(stderr, "usage: bench_lockstep [ROWS STEPS ROUNDS]   (e.g. 64 1000 5)\n");
		comm_abort(&c, 2);
	}
	openblas_set_num_threads(1); /* one BLAS thread a rank, as mtrain's ranks */
	struct step *st = malloc(sizeof(*st));
	size_t n = (size_t)steps * (size_t)rounds, all = n * (size_t)c.size;
	double *compute[PHASES], *after[PHASES], *every = malloc(all * sizeof(double));
	for (int p = 0; p < PHASES; p++) {
		compute[p] = malloc(n * sizeof(double));
		after[p] = malloc(n * sizeof(double));
		if (!compute[p] || !after[p])
			comm_abort(&c, 1);
	}
	if (!st || !every)
		comm_abort(&c, 1);
	step_init(st, rows);
	struct shard s;
	shard_plan(&s, FLOATS, c.rank, c.size);
	float *g = bench_rand((size_t)c.size * s.each, 0.0f);

	/* Every product right and the sums right before anything is timed;
	 * then a warm-up step of each phase. */
	int ok = 1;
	for (int i = 0; i < st->n_calls; i++) {
		gemm_run(&st->call[i]);
		ok &= gemm_check(&st->call[i], "bench_lockstep");
	}
	ok = !comm_any(&c, !ok) && reduced_right(&c, g, FLOATS, &s);
	for (int p = 0; p < PHASES; p++)
		run_phase(&c, st, (enum phase)p, steps < 50 ? steps : 50, g, &s, compute[p], after[p]);
	for (int r = 0; r < rounds; r++)
		for (int p = 0; p < PHASES; p++)
			run_phase(&c, st, (enum phase)p, steps, g, &s, compute[p] + (size_t)r * steps,
				  after[p] + (size_t)r * steps);

	/* Means over every rank; the free steps' spread and pairmax from all
	 * ranks' steps, gathered. */
	double m[PHASES][2];
	for (int p = 0; p < PHASES; p++) {
		m[p][0] = mean(compute[p], n);
		m[p][1] = mean(after[p], n);
	}
	comm_sum_host(&c, &m[0][0], 2 * PHASES);
	comm_allgather_host(&c, compute[FREE], every, n * sizeof(double));
	double pairmax = 0;
	for (size_t i = 0; i < n; i++) {
		double top = every[i];
		for (int k = 1; k < c.size; k++)
			top = every[(size_t)k * n + i] > top ? every[(size_t)k * n + i] : top;
		pairmax += top;
	}
	pairmax /= (double)n;
	qsort(every, all, sizeof(double), bench_cmp_double);
	for (int p = 0; p < PHASES; p++)
		for (int k = 0; k < 2; k++)
			m[p][k] /= c.size;
	if (!c.rank)
		printf("lockstep ranks %d rows %d steps %d rounds %d free_ms %.4f free_p50 %.4f "
		       "free_p99 %.4f free_max %.4f pairmax_ms %.4f barrier_ms %.4f wait_ms %.4f "
		       "reduce_ms %.4f collectives_ms %.4f sums %s\n",
		       c.size, rows, steps, rounds, m[FREE][0], quantile(every, all, 0.5),
		       quantile(every, all, 0.99), every[all - 1], pairmax,
		       m[BARRIER][0] + m[BARRIER][1], m[BARRIER][1], m[REDUCE][0] + m[REDUCE][1],
		       m[REDUCE][1], ok ? "ok" : "WRONG");
	step_free(st);
	free(st);
	free(g);
	free(every);
	for (int p = 0; p < PHASES; p++) {
		free(compute[p]);
		free(after[p]);
	}
	comm_finalize(&c);
	return ok ? 0 : 1;
}
