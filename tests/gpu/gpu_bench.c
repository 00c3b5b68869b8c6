/* GPU rates for tests/gpu/check.sh, checked while timed: cuBLAS alone on a
 * square product (fp32 with TF32 off, and bf16), and the EMA update's memory
 * bandwidth against a plain device-to-device copy of the same bytes. Median
 * of repeated runs after a warm-up. Skips (77) without a GPU.
 *   gpu_bench            prints "cublas fp32 n 4096 tflops ..." and so on */
#include "gpu.h"
#include "log.h"
#include "rng.h"

#include <math.h>
#include <string.h>
#include <time.h>

#define REPEATS 7

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* How many times median_time calls op: one warm-up, then the timings. */
#define MEDIAN_CALLS(inner) (1 + REPEATS * (inner))

/* Median seconds of one call of op, each timing covering `inner` calls. */
typedef void (*op_fn)(void *ctx);
static double median_time(const struct backend *be, op_fn op, void *ctx, int inner)
{
	double t[REPEATS];
	op(ctx);
	be->synchronize(be);
	for (int r = 0; r < REPEATS; r++) {
		double t0 = log_now();
		for (int i = 0; i < inner; i++)
			op(ctx);
		be->synchronize(be);
		t[r] = (log_now() - t0) / inner;
	}
	qsort(t, REPEATS, sizeof(double), by_value);
	return t[REPEATS / 2];
}

struct mm {
	const struct backend *be;
	float *a, *b, *c;
	int n;
};

static void run_mm(void *p)
{
	struct mm *m = p;
	m->be->matmul(m->be, m->c, m->a, m->b, m->n, m->n, m->n, 0, 0, 0.0f);
}

struct ema {
	const struct backend *be;
	float *shadow, *w;
	size_t n;
};

static void run_ema(void *p)
{
	struct ema *e = p;
	e->be->ema_update(e->be, e->shadow, e->w, e->n, 0.999f);
}

static void run_copy(void *p)
{
	struct ema *e = p;
	e->be->copy(e->be, e->shadow, e->w, e->n * sizeof(float));
}

/* c[row, col] against a double-precision dot product on the host. */
static int check_product(struct mm *m, const float *ha, const float *hb, double tol)
{
	int n = m->n, bad = 0;
	float got;
	for (int probe = 0; probe < 4; probe++) {
		int row = (probe * 977) % n, col = (probe * 1531 + 7) % n;
		double want = 0;
		for (int k = 0; k < n; k++)
			want += (double)ha[(size_t)row * n + k] * hb[(size_t)k * n + col];
		m->be->copy_out(m->be, &got, m->c + (size_t)row * n + col, sizeof(float));
		if (fabs(got - want) > tol * sqrt((double)n)) {
			fprintf(stderr, "gpu_bench: c[%d,%d] = %g, want %g\n", row, col, got, want);
			bad = 1;
		}
	}
	return bad;
}

int main(void)
{
	const struct backend *be = gpu_or_skip("gpu_bench", 0, 1);
	struct rng r;
	rng_init(&r, 1, 0);
	int bad = 0;

	const int n = 4096;
	size_t nn = (size_t)n * n;
	float *ha = malloc(nn * sizeof(float)), *hb = malloc(nn * sizeof(float));
	for (size_t i = 0; i < nn; i++) {
		ha[i] = 2.0f * rng_uniform(&r) - 1.0f;
		hb[i] = 2.0f * rng_uniform(&r) - 1.0f;
	}
	struct mm m = {be, be->alloc(be, nn * 4), be->alloc(be, nn * 4), be->alloc(be, nn * 4), n};
	be->copy_in(be, m.a, ha, nn * 4);
	be->copy_in(be, m.b, hb, nn * 4);
	const char *names[2] = {"fp32", "bf16"};
	for (int p = 0; p < 2; p++) {
		be->set_precision(be, (enum precision)p);
		double s = median_time(be, run_mm, &m, 5);
		bad |= check_product(&m, ha, hb, p ? 1e-2 : 1e-5);
		printf("cublas %s n %d tflops %.1f\n", names[p], n, 2.0 * n * (double)nn / s * 1e-12);
	}
	be->set_precision(be, PRECISION_FP32);
	be->free(be, m.a), be->free(be, m.b), be->free(be, m.c);

	/* 1 GiB per array: far beyond the 60 MB L2. The EMA runs first, from
	 * shadow 0 towards w = 1 at a few probes: after k updates a probe must
	 * hold what k steps of mathfn.h's ema_step give on the host. */
	struct ema e = {be, NULL, NULL, (size_t)1 << 28};
	e.shadow = be->alloc(be, e.n * 4);
	e.w = be->alloc(be, e.n * 4);
	float one = 1.0f, got, want = 0.0f;
	for (size_t i = 0; i < e.n; i += e.n / 8)
		be->copy_in(be, e.w + i, &one, sizeof(one));
	double t_ema = median_time(be, run_ema, &e, 5);
	for (int k = 0; k < MEDIAN_CALLS(5); k++)
		want = ema_step(want, 1.0f, 0.999f);
	for (size_t i = 0; i < e.n; i += e.n / 8) {
		be->copy_out(be, &got, e.shadow + i, sizeof(got));
		if (!(fabs(got - want) <= 1e-5 * want)) {
			fprintf(stderr, "gpu_bench: EMA shadow[%zu] = %.9g, want %.9g\n", i, got, want);
			bad = 1;
		}
	}
	double t_copy = median_time(be, run_copy, &e, 5);
	double gb_copy = 2.0 * e.n * 4 / t_copy * 1e-9, gb_ema = 3.0 * e.n * 4 / t_ema * 1e-9;
	printf("ema GB/s %.0f copy GB/s %.0f ema/copy %.2f\n", gb_ema, gb_copy, gb_ema / gb_copy);
	be->free(be, e.shadow), be->free(be, e.w);
	free(ha), free(hb);
	return bad;
}
