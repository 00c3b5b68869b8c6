/* What the benchmark programs share: a clock, random buffers, and matrix
 * products stated as the CPU backend's matmul states them, run as bare
 * cblas_sgemm calls and checked against a naive product. Header-only: each
 * benchmark is one program. */
#pragma once
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GEMM_CHECK_SAMPLES 4096 /* entries of a large product checked */

/* One product: c (M,N) = op(a) (M,K) @ op(b) (K,N), a stored (K,M) when ta,
 * b stored (N,K) when tb. */
struct gemm {
	int m, n, k, ta, tb;
	const float *a, *b;
	float *c;
	char what[48];    /* e.g. "forward layer 2", "layer 3 weight grad" */
	int tag;          /* the caller's (bench_layers: the model layer) */
};

static inline double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static unsigned long long bench_lcg = 42;

/* Uniform in [0, 1), 24 bits, from one fixed sequence. */
static inline double bench_unit(void)
{
	bench_lcg = bench_lcg * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(bench_lcg >> 40) / (double)(1ULL << 24);
}

/* n floats, 64-byte aligned like the CPU backend's, uniform in [lo, lo + 1);
 * exits on no memory. */
static inline float *bench_rand(size_t n, float lo)
{
	float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
	if (!p) {
		fprintf(stderr, "bench: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		p[i] = (float)bench_unit() + lo;
	return p;
}

/* The call exactly as the CPU backend's matmul makes it (row-major, beta 0). */
static inline void gemm_run(const struct gemm *g)
{
	cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans,
		    g->tb ? CblasTrans : CblasNoTrans, g->m, g->n, g->k, 1.0f, g->a,
		    g->ta ? g->m : g->k, g->b, g->tb ? g->k : g->n, 0.0f, g->c, g->n);
}

/* Whether c[i,j] is op(a) @ op(b) there, against a naive double-precision
 * dot product: within 1e-4 of the sum of |a||b| (a wrong shape or
 * transpose is off by about sqrt(K) / K of that). prog names the program
 * in the line a wrong entry gets. */
static inline int gemm_entry_ok(const struct gemm *g, int i, int j, const char *prog)
{
	double sum = 0, mag = 0;
	for (int p = 0; p < g->k; p++) {
		double a = g->ta ? g->a[(size_t)p * g->m + i] : g->a[(size_t)i * g->k + p];
		double b = g->tb ? g->b[(size_t)j * g->k + p] : g->b[(size_t)p * g->n + j];
		sum += a * b;
		mag += fabs(a * b);
	}
	double got = g->c[(size_t)i * g->n + j];
	if (fabs(got - sum) <= 1e-4 * mag + 1e-6)
		return 1;
	fprintf(stderr, "%s: wrong product in %s (%d x %d x %d): c[%d,%d] = %.7g, want %.7g\n",
		prog, g->what, g->m, g->n, g->k, i, j, got, sum);
	return 0;
}

/* Every entry of a small product, GEMM_CHECK_SAMPLES random ones of a
 * large one. */
static inline int gemm_check(const struct gemm *g, const char *prog)
{
	if ((long long)g->m * g->n <= GEMM_CHECK_SAMPLES) {
		for (int i = 0; i < g->m; i++)
			for (int j = 0; j < g->n; j++)
				if (!gemm_entry_ok(g, i, j, prog))
					return 0;
		return 1;
	}
	for (int s = 0; s < GEMM_CHECK_SAMPLES; s++)
		if (!gemm_entry_ok(g, (int)(bench_unit() * g->m), (int)(bench_unit() * g->n), prog))
			return 0;
	return 1;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* text as an integer in [lo, hi]: 0, or -1. */
static inline int bench_parse_int(const char *text, int lo, int hi, int *out)
{
	char *end;
	long v = strtol(text, &end, 10);
	if (!*text || *end || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}
