/* bench_sgemm: this machine's own single-thread OpenBLAS sgemm rate for the
 * matrix products of one training step of the default model, the baseline
 * jobs/bench.sh sets mtrain's achieved GFLOP/s against.
 *
 * usage: bench_sgemm ROWS [REPS TRIALS]   (ROWS: rows per rank, e.g. 64)
 * prints: sgemm rows 64 gflops 105.3 min 101.2 max 106.0 mflop_step 77.5
 * (gflops is the median over TRIALS of REPS steps each; exit 1 on a wrong
 * product or bad arguments).
 *
 * Letters: R rows per rank, D input width, C classes, I/O layer fan_in/out. */
#include "config.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define IN_DIM 784  /* D: Fashion-MNIST images, 28 x 28 */
#define CLASSES 10  /* C */
#define WARMUP_S 0.3
#define MAX_TRIALS 101
#define MODEL_LAYERS_MAX (MAX_HIDDEN + 1)
#define MAX_CALLS (3 * MODEL_LAYERS_MAX)

/* One product as the backend's matmul states it: c (M,N) = op(a) (M,K) @
 * op(b) (K,N), a stored (K,M) when ta, b stored (N,K) when tb. */
struct gemm {
	int m, n, k, ta, tb;
	const float *a, *b;
	float *c;
	const char *what; /* e.g. "forward dense_1" */
};

/* The buffers of model.c for one rank's batch, host memory. */
struct step {
	int n_layers, in[MODEL_LAYERS_MAX], out[MODEL_LAYERS_MAX];
	float *x;                        /* (R, D) */
	float *w[MODEL_LAYERS_MAX];      /* (I, O) kernels */
	float *g[MODEL_LAYERS_MAX];      /* (I, O) kernel gradients */
	float *z[MODEL_LAYERS_MAX];      /* (R, O) pre-activations */
	float *act[MODEL_LAYERS_MAX];    /* (R, O) activations (hidden layers) */
	float *dlogits;                  /* (R, C) */
	float *scratch[2];               /* (R, max width) backward ping-pong */
	struct gemm call[MAX_CALLS];
	int n_calls;
	char names[MAX_CALLS][48];
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* n floats, 64-byte aligned like the CPU backend's, uniform in [-1, 1). */
static float *rand_alloc(size_t n, unsigned long long *state)
{
	float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
	if (!p) {
		fprintf(stderr, "bench_sgemm: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++) {
		*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
		p[i] = (float)((double)(*state >> 40) / (double)(1ULL << 24)) * 2.0f - 1.0f;
	}
	return p;
}

static void add_call(struct step *s, int m, int n, int k, int ta, int tb, const float *a,
		     const float *b, float *c, const char *phase, int layer)
{
	struct gemm *g = &s->call[s->n_calls];
	snprintf(s->names[s->n_calls], sizeof(s->names[0]), "%s layer %d", phase, layer);
	*g = (struct gemm){m, n, k, ta, tb, a, b, c, s->names[s->n_calls]};
	s->n_calls++;
}

/* The default job's model (config_defaults' hidden widths between D and C)
 * and the products model_forward then model_backward issue for R rows, in
 * their order and on the same buffers. */
static void step_init(struct step *s, int rows)
{
	struct config cfg;
	unsigned long long seed = 42;
	config_defaults(&cfg);
	memset(s, 0, sizeof(*s));
	s->n_layers = cfg.n_hidden + 1;
	int max_width = IN_DIM;
	for (int l = 0; l < s->n_layers; l++) {
		s->in[l] = l ? s->out[l - 1] : IN_DIM;
		s->out[l] = l < cfg.n_hidden ? cfg.hidden[l] : CLASSES;
		if (s->out[l] > max_width)
			max_width = s->out[l];
		s->w[l] = rand_alloc((size_t)s->in[l] * s->out[l], &seed);
		s->g[l] = rand_alloc((size_t)s->in[l] * s->out[l], &seed);
		s->z[l] = rand_alloc((size_t)rows * s->out[l], &seed);
		s->act[l] = rand_alloc((size_t)rows * s->out[l], &seed);
	}
	s->x = rand_alloc((size_t)rows * IN_DIM, &seed);
	s->dlogits = rand_alloc((size_t)rows * CLASSES, &seed);
	for (int i = 0; i < 2; i++)
		s->scratch[i] = rand_alloc((size_t)rows * max_width, &seed);

	/* model_forward: z[l] (R,O) = in (R,I) @ w[l] (I,O). */
	for (int l = 0; l < s->n_layers; l++)
		add_call(s, rows, s->out[l], s->in[l], 0, 0, l ? s->act[l - 1] : s->x,
			 s->w[l], s->z[l], "forward", l);
	/* model_backward: g[l] (I,O) = in^T @ dz (R,O); da (R,I) = dz @ w[l]^T. */
	const float *dz = s->dlogits;
	for (int l = s->n_layers - 1; l >= 0; l--) {
		const float *in = l ? s->act[l - 1] : s->x;
		add_call(s, s->in[l], s->out[l], rows, 1, 0, in, dz, s->g[l], "weight grad", l);
		if (l == 0)
			break;
		float *da = s->scratch[l & 1];
		add_call(s, rows, s->in[l], s->out[l], 0, 1, dz, s->w[l], da, "input grad", l);
		dz = da;
	}
}

static void step_free(struct step *s)
{
	for (int l = 0; l < s->n_layers; l++) {
		free(s->w[l]);
		free(s->g[l]);
		free(s->z[l]);
		free(s->act[l]);
	}
	free(s->x);
	free(s->dlogits);
	free(s->scratch[0]);
	free(s->scratch[1]);
}

/* The call exactly as the CPU backend's matmul makes it (row-major, beta 0). */
static void gemm_run(const struct gemm *g)
{
	cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans,
		    g->tb ? CblasTrans : CblasNoTrans, g->m, g->n, g->k, 1.0f, g->a,
		    g->ta ? g->m : g->k, g->b, g->tb ? g->k : g->n, 0.0f, g->c, g->n);
}

/* Whether g->c holds op(a) @ op(b), against a naive double-precision loop:
 * each element within 1e-4 of the sum of |a||b| over its dot product (a
 * wrong shape or transpose is off by about sqrt(K) / K of that). */
static int gemm_check(const struct gemm *g)
{
	for (int i = 0; i < g->m; i++)
		for (int j = 0; j < g->n; j++) {
			double sum = 0, mag = 0;
			for (int p = 0; p < g->k; p++) {
				double a = g->ta ? g->a[(size_t)p * g->m + i] : g->a[(size_t)i * g->k + p];
				double b = g->tb ? g->b[(size_t)j * g->k + p] : g->b[(size_t)p * g->n + j];
				sum += a * b;
				mag += fabs(a * b);
			}
			double got = g->c[(size_t)i * g->n + j];
			if (!(fabs(got - sum) <= 1e-4 * mag + 1e-6)) {
				fprintf(stderr, "bench_sgemm: wrong product in %s (%d x %d x %d): "
					"c[%d,%d] = %.7g, want %.7g\n", g->what, g->m, g->n,
					g->k, i, j, got, sum);
				return 0;
			}
		}
	return 1;
}

static double step_flops(const struct step *s)
{
	double f = 0;
	for (int i = 0; i < s->n_calls; i++)
		f += 2.0 * s->call[i].m * s->call[i].n * s->call[i].k;
	return f;
}

static void step_run(const struct step *s)
{
	for (int i = 0; i < s->n_calls; i++)
		gemm_run(&s->call[i]);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int parse_int(const char *text, int lo, int hi, int *out)
{
	char *end;
	long v = strtol(text, &end, 10);
	if (!*text || *end || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

int main(int argc, char **argv)
{
	int rows, reps = 200, trials = 5;
	if ((argc != 2 && argc != 4) || parse_int(argv[1], 1, 1 << 16, &rows) ||
	    (argc == 4 && (parse_int(argv[2], 1, 1 << 24, &reps) ||
			   parse_int(argv[3], 1, MAX_TRIALS, &trials)))) {
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
		if (!gemm_check(&s->call[i]))
			goto out;
	}
	for (double t0 = now(); now() - t0 < WARMUP_S;)
		step_run(s);

	double rate[MAX_TRIALS], flops = step_flops(s);
	for (int t = 0; t < trials; t++) {
		double t0 = now();
		for (int r = 0; r < reps; r++)
			step_run(s);
		rate[t] = flops * reps / (now() - t0) * 1e-9;
	}
	/* The last product of the last timed step, still in place, is right too
	 * (its inputs are not written after it within a step). */
	if (!gemm_check(&s->call[s->n_calls - 1]))
		goto out;

	qsort(rate, (size_t)trials, sizeof(double), cmp_double);
	double median = (rate[(trials - 1) / 2] + rate[trials / 2]) / 2;
	printf("sgemm rows %d gflops %.2f min %.2f max %.2f mflop_step %.2f\n", rows,
	       median, rate[0], rate[trials - 1], flops * 1e-6);
	status = 0;
out:
	step_free(s);
	free(s);
	return status;
}
