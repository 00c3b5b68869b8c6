/* bench_sgemm: this machine's own single-thread OpenBLAS sgemm rate for the
 * matrix products of one training step of the default model, the baseline
 * bench/bench.sh sets mtrain's achieved GFLOP/s against.
 *
 * usage: bench_sgemm ROWS [REPS TRIALS]   (ROWS: rows per rank, e.g. 64)
 * prints: sgemm rows 64 gflops 105.3 min 101.2 max 106.0 mflop_step 77.5
 * (gflops is the median over TRIALS of REPS steps each; exit 1 on a wrong
 * product or bad arguments). */
#include "backend.h"
#include "bench_mlp_step.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WARMUP_S 0.3
#define MAX_TRIALS 101

int main(int argc, char **argv)
{
	backend_cpu_pick_kernels(argv); /* the kernels mtrain runs */
	int rows, reps = 200, trials = 5;
	if ((argc != 2 && argc != 4) || bench_parse_int(argv[1], 1, 1 << 16, &rows) ||
	    (argc == 4 && (bench_parse_int(argv[2], 1, 1 << 24, &reps) ||
			   bench_parse_int(argv[3], 1, MAX_TRIALS, &trials)))) {
		fprintf(stderr, "usage: bench_sgemm ROWS [REPS TRIALS]   (e.g. 64, or 64 200 5)\n");
		return 1;
	}
	/* mtrain runs one BLAS thread per rank; so does its baseline. */
	openblas_set_num_threads(1);
	struct step *s = malloc(sizeof(*s));
	if (!s)
		return 1;
	step_init(s, rows);
	int status = 1;

	/* Every product of one step is right before any is timed. */
	for (int i = 0; i < s->n_calls; i++) {
		gemm_run(&s->call[i]);
		if (!gemm_check(&s->call[i], "bench_sgemm"))
			goto out;
	}
	for (double t0 = bench_now(); bench_now() - t0 < WARMUP_S;)
		step_run(s);

	double rate[MAX_TRIALS], flops = step_flops(s);
	for (int t = 0; t < trials; t++) {
		double t0 = bench_now();
		for (int r = 0; r < reps; r++)
			step_run(s);
		rate[t] = flops * reps / (bench_now() - t0) * 1e-9;
	}
	/* The last product of the last timed step, still in place, is right too
	 * (its inputs are not written after it within a step). */
	if (!gemm_check(&s->call[s->n_calls - 1], "bench_sgemm"))
		goto out;

	qsort(rate, (size_t)trials, sizeof(double), bench_cmp_double);
	double median = (rate[(trials - 1) / 2] + rate[trials / 2]) / 2;
	printf("sgemm rows %d gflops %.2f min %.2f max %.2f mflop_step %.2f\n", rows,
	       median, rate[0], rate[trials - 1], flops * 1e-6);
	status = 0;
out:
	step_free(s);
	free(s);
	return status;
}
