/* What the programs that check the CUDA backend's ops against the CPU's
 * share (test_backend_ops.c, test_backend_seq.c): a buffer holding the same
 * values on each backend, and the normwise difference of the GPU's result
 * from the CPU's. Each program sets cpu and gpu and seeds r first. */
#pragma once
#include "backend.h"
#include "gpu.h" /* before the globals below: its gpu_or_skip has a local gpu */
#include "rng.h"
#include "unit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* fp32 ops within this of the CPU (normwise relative; TF32 off). */
#define TOL_FP32 1e-5
#define TOL_BF16 2e-2
/* bf16 inputs keep 8 bits of mantissa: a product of them is further than
 * this from fp32's, or it was not computed in bf16. */
#define MIN_BF16 1e-4

static struct rng r;
static const struct backend *cpu, *gpu;

static inline float *random_host(size_t n, float lo, float hi)
{
	float *h = malloc(n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		h[i] = lo + (hi - lo) * rng_uniform(&r);
	return h;
}

/* A buffer holding the same host values on each backend. */
struct pair {
	float *c, *g;
	size_t n;
};

static inline struct pair upload(const float *h, size_t n)
{
	struct pair p = {cpu->alloc(cpu, n * sizeof(float)), gpu->alloc(gpu, n * sizeof(float)), n};
	cpu->copy_in(cpu, p.c, h, n * sizeof(float));
	gpu->copy_in(gpu, p.g, h, n * sizeof(float));
	return p;
}

static inline struct pair random_pair(size_t n, float lo, float hi)
{
	float *h = random_host(n, lo, hi);
	struct pair p = upload(h, n);
	free(h);
	return p;
}

static inline void release(struct pair p)
{
	cpu->free(cpu, p.c);
	gpu->free(gpu, p.g);
}

/* Normwise relative difference of the GPU result from the CPU one; infinite
 * when either holds a NaN (fmax alone would drop it). */
static inline double diff(struct pair p)
{
	float *g = malloc(p.n * sizeof(float));
	gpu->copy_out(gpu, g, p.g, p.n * sizeof(float));
	double num = 0, den = 0;
	for (size_t i = 0; i < p.n; i++) {
		double e = fabs((double)g[i] - p.c[i]);
		num = isnan(e) ? INFINITY : fmax(num, e);
		den = fmax(den, fabs((double)p.c[i]));
	}
	free(g);
	return den > 0 ? num / den : num;
}

#define EXPECT_CLOSE(p, tol, what)                                             \
	do {                                                                   \
		double d_ = diff(p);                                           \
		if (d_ > (tol))                                                \
			fprintf(stderr, "%s: relative difference %g\n", what, d_); \
		EXPECT(d_ <= (tol));                                           \
	} while (0)
