/* What the benchmark programs share: a clock, random buffers, matrix
 * products stated as the CPU backend's matmul states them, run as bare
 * cblas_sgemm calls and checked against a naive product, and values whose
 * sum over ranks a collective's result is checked against. Header-only: each
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
 * b stored (N,K) when tb; or a batch of them, as the CPU backend's
 * matmul_batched states it: product i on a + i*sa, b + i*sb, c + i*sc, each
 * matrix's rows lda, ldb, ldc floats apart. */
struct gemm {
	int m, n, k, ta, tb;
	const float *a, *b;
	float *c;
	char what[48];    /* e.g. "forward layer 2", "layer 3 weight grad" */
	int tag;          /* the caller's (bench_layers: the model layer) */
	int batch;        /* products, e.g. 64 (a head's, one per row); 0: one */
	int lda, ldb, ldc; /* 0: packed (a's: M, or K when ta; and so on) */
	size_t sa, sb, sc; /* floats from one product's matrix to the next's */
};

static inline int gemm_batch(const struct gemm *g) { return g->batch ? g->batch : 1; }
static inline int gemm_lda(const struct gemm *g) { return g->lda ? g->lda : g->ta ? g->m : g->k; }
static inline int gemm_ldb(const struct gemm *g) { return g->ldb ? g->ldb : g->tb ? g->k : g->n; }
static inline int gemm_ldc(const struct gemm *g) { return g->ldc ? g->ldc : g->n; }

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

/* The calls exactly as the CPU backend's matmul (and matmul_batched, one
 * call a product) make them: row-major, beta 0. */
static inline void gemm_run(const struct gemm *g)
{
	for (int i = 0; i < gemm_batch(g); i++)
		cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans,
			    g->tb ? CblasTrans : CblasNoTrans, g->m, g->n, g->k, 1.0f,
			    g->a + (size_t)i * g->sa, gemm_lda(g), g->b + (size_t)i * g->sb,
			    gemm_ldb(g), 0.0f, g->c + (size_t)i * g->sc, gemm_ldc(g));
}

/* Whether c[i,j] of product t of the batch is op(a) @ op(b) there, against
 * a naive double-precision dot product: within 1e-4 of the sum of |a||b| (a
 * wrong shape or transpose is off by about sqrt(K) / K of that). prog names
 * the program in the line a wrong entry gets. */
static inline int gemm_entry_ok(const struct gemm *g, int t, int i, int j, const char *prog)
{
	const float *a = g->a + (size_t)t * g->sa, *b = g->b + (size_t)t * g->sb;
	size_t lda = (size_t)gemm_lda(g), ldb = (size_t)gemm_ldb(g);
	double sum = 0, mag = 0;
	for (int p = 0; p < g->k; p++) {
		double x = g->ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p];
		double y = g->tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j];
		sum += x * y;
		mag += fabs(x * y);
	}
	double got = g->c[(size_t)t * g->sc + (size_t)i * gemm_ldc(g) + j];
	if (fabs(got - sum) <= 1e-4 * mag + 1e-6)
		return 1;
	fprintf(stderr, "%s: wrong product in %s (%d x %d x %d): c%s[%d,%d] = %.7g, want %.7g\n",
		prog, g->what, g->m, g->n, g->k, g->batch ? " of a batch" : "", i, j, got, sum);
	return 0;
}

/* Every entry of a small product (or batch), GEMM_CHECK_SAMPLES random ones
 * of a large one. */
static inline int gemm_check(const struct gemm *g, const char *prog)
{
	int nb = gemm_batch(g);
	if ((long long)nb * g->m * g->n <= GEMM_CHECK_SAMPLES) {
		for (int t = 0; t < nb; t++)
			for (int i = 0; i < g->m; i++)
				for (int j = 0; j < g->n; j++)
					if (!gemm_entry_ok(g, t, i, j, prog))
						return 0;
		return 1;
	}
	for (int s = 0; s < GEMM_CHECK_SAMPLES; s++) {
		int t = nb > 1 ? (int)(bench_unit() * nb) : 0;
		int i = (int)(bench_unit() * g->m);
		if (!gemm_entry_ok(g, t, i, (int)(bench_unit() * g->n), prog))
			return 0;
	}
	return 1;
}

/* a[i] = (rank + 1) (i % 7 + 1): after a sum over ranks, a[i] is
 * ranks (ranks + 1) / 2 (i % 7 + 1), a value that depends on its place, so
 * a piece put in the wrong place shows. */
static inline void bench_fill_rank(float *a, size_t n, int rank)
{
	for (size_t i = 0; i < n; i++)
		a[i] = (float)(rank + 1) * (float)(i % 7 + 1);
}

/* 1 when every value in [first, first + len) is bench_fill_rank's summed
 * over ranks. */
static inline int bench_summed(const float *a, size_t first, size_t len, int ranks)
{
	float sum = (float)ranks * (float)(ranks + 1) / 2.0f;
	for (size_t i = first; i < first + len; i++)
		if (a[i] != sum * (float)(i % 7 + 1))
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
