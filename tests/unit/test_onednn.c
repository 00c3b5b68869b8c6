/* oneDNN's kernels (backend_cpu: conv, conv_backward_data,
 * conv_backward_weights, bn_train_forward) against mtrain's own
 * (backend_cpu_own: im2col, sgemm and col2im; batch norm's statistics and
 * normalising apart) on the same inputs: every conv2d and batch norm shape
 * the presets use (their files in jobs/ read as mtrain reads them), and
 * shapes they do not (paddings, strides, kernels wider than the stride,
 * even kernels, one input channel or several; a prime number of rows).
 * The ops, and each conv2d's output and the loss of a whole model, agree
 * within 1e-5 (normwise relative: the largest difference over the largest
 * value); the model's gradients, after the backward's 20 layers, within
 * 1e-4 (ResNet-20's reach 1.2e-5). bf16's rounding and products too: on
 * a CPU whose oneDNN multiplies bf16 (AVX512_BF16), its kernels (conv2d's,
 * dense's and attention's products) against mtrain's rounding of the
 * operands for the fp32 kernels, within 1e-5 (the order of the sums).
 * And dense's fp32 products: oneDNN's sgemm where the table takes it
 * (AVX-512) against OpenBLAS's, within 1e-5, plain, transposed, added to. */
#include "backend.h"
#include "backend_cpu_bf16.h"
#include "backend_cpu_dnnl.h"
#include "config.h"
#include "layer_spec.h"
#include "log.h"
#include "model.h"
#include "rng.h"
#include "unit.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 6
#define CLASSES 10
#define TOL 1e-5      /* the ops, a model's conv2d outputs and loss */
#define TOL_GRAD 1e-4 /* a model's gradients, after 20 layers of rounding */

/* max |a - b| / max(max |b|, floor) over n values; infinite on a NaN. */
static double differ(const float *a, const float *b, size_t n, double floor)
{
	double num = 0, den = floor;
	for (size_t i = 0; i < n; i++) {
		double e = fabs((double)a[i] - b[i]);
		num = isnan(e) ? INFINITY : fmax(num, e);
		den = fmax(den, fabs((double)b[i]));
	}
	return den > 0 ? num / den : num;
}

static void expect_close(const char *what, const char *desc, int layer, const float *a,
			 const float *b, size_t n, double floor, double tol)
{
	double d = differ(a, b, n, floor);
	if (d > tol)
		fprintf(stderr, "%s: %s (%d) differs by %.3g\n", desc, what, layer, d);
	EXPECT(d <= tol);
}

static float *random_buf(struct rng *r, size_t n)
{
	float *p = malloc(n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		p[i] = 2.0f * rng_uniform(r) - 1.0f;
	return p;
}

/* The three ops on random x, kernel, bias and dy against their im2col
 * composition (backend.h's definition of them). */
static void check_ops(const char *desc, int layer, int rows, const struct window *w, int f)
{
	const struct backend *dn = backend_cpu(), *ref = backend_cpu_own();
	size_t pos = (size_t)w->oh * w->ow, k = (size_t)w->kh * w->kw * w->c,
	       in = (size_t)w->h * w->w * w->c;
	struct rng r;
	rng_init(&r, 5, (uint64_t)layer);
	float *x = random_buf(&r, rows * in), *kern = random_buf(&r, k * f),
	      *bias = random_buf(&r, f), *dy = random_buf(&r, rows * pos * f);
	float *y[2], *dx[2], *dk[2], *db[2], *cols = malloc(rows * pos * k * sizeof(float));
	for (int i = 0; i < 2; i++) {
		y[i] = calloc(rows * pos * f, sizeof(float));
		dx[i] = calloc(rows * in, sizeof(float));
		dk[i] = calloc(k * f, sizeof(float));
		db[i] = calloc(f, sizeof(float));
	}
	dn->conv(dn, y[0], x, kern, bias, rows, w, f);
	dn->conv_backward_data(dn, dx[0], dy, kern, rows, w, f);
	dn->conv_backward_weights(dn, dk[0], db[0], x, dy, rows, w, f);
	ref->im2col(ref, cols, x, rows, w);
	ref->matmul(ref, y[1], cols, kern, (int)(rows * pos), f, (int)k, 0, 0, 0.0f);
	ref->bias_act(ref, NULL, y[1], bias, (int)(rows * pos), f, ACT_RELU);
	ref->matmul(ref, dk[1], cols, dy, (int)k, f, (int)(rows * pos), 1, 0, 0.0f);
	ref->bias_grad(ref, db[1], dy, (int)(rows * pos), f);
	ref->matmul(ref, cols, dy, kern, (int)(rows * pos), (int)k, f, 0, 1, 0.0f);
	ref->col2im(ref, dx[1], cols, rows, w);
	expect_close("conv", desc, layer, y[0], y[1], rows * pos * f, 0, TOL);
	expect_close("conv_backward_data", desc, layer, dx[0], dx[1], rows * in, 0, TOL);
	expect_close("conv_backward_weights (kernel)", desc, layer, dk[0], dk[1], k * f, 0, TOL);
	expect_close("conv_backward_weights (bias)", desc, layer, db[0], db[1], f, 0, TOL);
	for (int i = 0; i < 2; i++) {
		free(y[i]);
		free(dx[i]);
		free(dk[i]);
		free(db[i]);
	}
	free(cols);
	free(x);
	free(kern);
	free(bias);
	free(dy);
}

/* Batch norm's forward in training, the backend's own kernels
 * (bn_train_forward) against the statistics in two passes and bn_forward:
 * the mean, variance, output and act(output), kept (y) or not (y NULL, a
 * relu fused into oneDNN's kernel). */
static void check_bn(int rows, int cols, int keep, enum act_kind act)
{
	const struct backend *dn = backend_cpu(), *ref = backend_cpu_own();
	EXPECT(dn->bn_train_forward && !ref->bn_train_forward);
	size_t n = (size_t)rows * cols;
	struct rng r;
	rng_init(&r, 9, (uint64_t)cols);
	float *x = random_buf(&r, n), *gamma = random_buf(&r, cols), *beta = random_buf(&r, cols);
	for (size_t i = 0; i < n; i++) /* channels of their own mean and scale */
		x[i] = x[i] * (1.0f + (float)(i % cols)) + 0.1f * (float)(i % cols);
	float *st[2], *y[2], *a[2];
	for (int k = 0; k < 2; k++) {
		st[k] = calloc(2 * (size_t)cols, sizeof(float));
		y[k] = calloc(n, sizeof(float));
		a[k] = calloc(n, sizeof(float));
	}
	dn->bn_train_forward(dn, keep ? y[0] : NULL, st[0], st[0] + cols, x, gamma, beta, rows,
			     cols, 1e-3f, a[0], act);
	ref->col_moment(ref, st[1], x, NULL, rows, cols, 1.0f / (float)rows);
	ref->col_moment(ref, st[1] + cols, x, st[1], rows, cols, 1.0f / (float)rows);
	ref->bn_forward(ref, keep ? y[1] : NULL, x, st[1], st[1] + cols, gamma, beta, rows, cols,
			1e-3f, a[1], act);
	char what[64];
	snprintf(what, sizeof(what), "batch norm %d x %d, %s", rows, cols, act_names[act]);
	expect_close("mean", what, 0, st[0], st[1], (size_t)cols, 0, TOL);
	expect_close("variance", what, 0, st[0] + cols, st[1] + cols, (size_t)cols, 0, TOL);
	if (keep)
		expect_close("y", what, 0, y[0], y[1], n, 0, TOL);
	expect_close("act(y)", what, 0, a[0], a[1], n, 0, TOL);
	for (int k = 0; k < 2; k++) {
		free(st[k]);
		free(y[k]);
		free(a[k]);
	}
	free(x);
	free(gamma);
	free(beta);
}

/* One training step of the model on each backend from the same weights
 * and batch; returns how many conv2d layers it compared. */
static int compare(const char *desc, const struct layer_spec *spec, int n, const int in[3])
{
	const struct backend *be[2] = {backend_cpu(), backend_cpu_own()};
	EXPECT(be[0]->conv && !be[1]->conv);
	struct model m[2];
	size_t dim = (size_t)in[0] * in[1] * in[2];
	float *x = malloc(ROWS * dim * sizeof(float));
	int32_t y[ROWS];
	struct rng r;
	rng_init(&r, 11, 0);
	for (size_t i = 0; i < ROWS * dim; i++)
		x[i] = rng_uniform(&r);
	for (int i = 0; i < ROWS; i++)
		y[i] = (int32_t)rng_below(&r, CLASSES);
	float stats[2][2];
	for (int k = 0; k < 2; k++) {
		EXPECT(model_plan(&m[k], spec, n, in, CLASSES, 5) == 0);
		model_alloc(&m[k], be[k], ROWS);
		model_glorot(&m[k], 3, m[k].w);
		model_set_batch(&m[k], x, y, ROWS);
		model_set_position(&m[k], 7, 0);
		model_take_stats(&m[k], stats[k]);
		model_forward(&m[k], ROWS, 1, 1.0f / ROWS);
		model_take_stats(&m[k], stats[k]);
	}
	int convs = 0;
	for (int i = 0; i < m[0].n_layers; i++) {
		const struct layer *a = &m[0].layer[i], *b = &m[1].layer[i];
		if (a->spec.kind != LAYER_CONV2D)
			continue;
		convs++;
		check_ops(desc, i, 3, &a->win, a->spec.units);
		expect_close("output", desc, i, a->y, b->y, (size_t)ROWS * a->out_size, 0, TOL);
	}
	EXPECT(fabs(stats[0][0] - stats[1][0]) <= TOL * fabs(stats[1][0]));
	for (int k = 0; k < 2; k++)
		model_backward(&m[k], ROWS, NULL, NULL);
	/* each trainable variable's gradient on its own, so that a small one
	 * is not hidden behind a large one (below a hundredth of the model's
	 * largest: against that); a conv2d's bias ahead of a batch norm has a
	 * gradient of 0 but for rounding: against the model's largest */
	double most = 0;
	for (size_t i = 0; i < m[1].reg.trainable; i++)
		most = fmax(most, fabs(m[1].g[i]));
	size_t zero_at[MODEL_MAX_LAYERS];
	int n_zero = 0;
	for (int j = 0; j < m[0].n_layers; j++) {
		const struct layer *l = &m[0].layer[j];
		if (l->spec.kind == LAYER_BATCHNORM && l->src[0] >= 0 &&
		    m[0].layer[l->src[0]].spec.kind == LAYER_CONV2D)
			zero_at[n_zero++] = m[0].layer[l->src[0]].var[1];
	}
	for (int v = 0; v < m[0].reg.n_trainable; v++) {
		const struct param *p = &m[0].reg.p[v];
		double floor = 1e-2 * most;
		for (int j = 0; j < n_zero; j++)
			floor = zero_at[j] == p->offset ? most : floor;
		expect_close(p->name, desc, v, m[0].g + p->offset, m[1].g + p->offset, p->size,
			     floor, TOL_GRAD);
	}
	for (int k = 0; k < 2; k++)
		model_free(&m[k]);
	free(x);
	return convs;
}

static void check_model(const char *desc, const int in[3], int want_convs)
{
	struct layer_spec spec[MODEL_MAX_LAYERS];
	int n = 0;
	EXPECT(layer_spec_parse(desc, "test", spec, MODEL_MAX_LAYERS, &n) == 0);
	EXPECT(compare(desc, spec, n, in) == want_convs);
}

/* A preset's model and input shape as mtrain reads them (--config FILE). */
static void check_preset(const char *file, int want_convs)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/jobs/%s", MTRAIN_SOURCE_DIR, file);
	char *argv[] = {"--config", path, NULL};
	struct config cfg;
	config_defaults(&cfg);
	int help = 0, version = 0;
	EXPECT(config_parse_args(&cfg, 2, argv, &help, &version) == 0);
	struct layer_spec spec[MODEL_MAX_LAYERS];
	int n = 0, in[3] = {28, 28, 1}; /* Fashion-MNIST's, where it names none */
	EXPECT(model_specs(&cfg, spec, &n) == 0);
	EXPECT(!cfg.input_shape[0] ||
	       sscanf(cfg.input_shape, "%d,%d,%d", &in[0], &in[1], &in[2]) == 3);
	/* relu's derivative jumps at 0, where a value rounded to either side
	 * of it takes a gradient or none (one such in ResNet-20's first stage
	 * moves a beta's gradient by 1.5%): the whole-model comparison takes
	 * tanh in its place; the ops above took the presets' own shapes */
	char text[4096], *at;
	layer_spec_text(spec, n, text, sizeof(text));
	while ((at = strstr(text, "relu")))
		memcpy(at, "tanh", 4);
	EXPECT(layer_spec_parse(text, file, spec, MODEL_MAX_LAYERS, &n) == 0);
	EXPECT(compare(file, spec, n, in) == want_convs);
}

/* bf16 rounding: to nearest, ties to even, the low 16 bits cleared;
 * NaN, infinities and signed zeros kept. */
static void check_bf16_round(void)
{
	const float in[] = {1.0f, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f, 1.0f + 0x1p-8f + 0x1p-20f, -0.0f,
			    INFINITY, -3.0e38f, 0x1.fffffep127f, NAN};
	const float want[] = {1.0f, 1.0f, 1.0f + 0x4p-8f, 1.0f + 0x1p-7f, -0.0f,
			      INFINITY, -0x1.c4p+127f, INFINITY, NAN};
	const float *out = cpu_bf16_round(0, in, sizeof(in) / sizeof(in[0]));
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		uint32_t u;
		memcpy(&u, &out[i], 4);
		EXPECT((u & 0xffffu) == 0);
		if (isnan(want[i]))
			EXPECT(isnan(out[i]));
		else if (out[i] != want[i] || signbit(out[i]) != signbit(want[i]))
			fprintf(stderr, "bf16 of %a: %a, want %a\n", in[i], out[i], want[i]);
		EXPECT(isnan(want[i]) || (out[i] == want[i] && signbit(out[i]) == signbit(want[i])));
	}
}

/* Under --precision bf16 the CPU's products are those of the operands
 * rounded to bf16 (exact in double, summed in fp32: within 1e-6), which
 * differ from fp32's; oneDNN's convolutions agree with im2col's products
 * so too. */
static void check_bf16(void)
{
	const struct backend *be = backend_cpu();
	enum { M = 7, K = 300, N = 5 };
	struct rng r;
	rng_init(&r, 8, 0);
	float *a = random_buf(&r, M * K), *b = random_buf(&r, K * N), c32[M * N], c16[M * N];
	EXPECT(be->set_precision(be, PRECISION_FP32) == 0);
	be->matmul(be, c32, a, b, M, N, K, 0, 0, 0.0f);
	EXPECT(be->set_precision(be, PRECISION_BF16) == 0);
	be->matmul(be, c16, a, b, M, N, K, 0, 0, 0.0f);
	float ra[M * K], rb[K * N], want[M * N];
	memcpy(ra, cpu_bf16_round(0, a, M * K), sizeof(ra));
	memcpy(rb, cpu_bf16_round(1, b, K * N), sizeof(rb));
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double s = 0;
			for (int k = 0; k < K; k++)
				s += (double)ra[i * K + k] * rb[k * N + j];
			want[i * N + j] = (float)s;
		}
	EXPECT(differ(c16, want, M * N, 0) <= 1e-6);
	EXPECT(differ(c16, c32, M * N, 0) > 1e-4);
	struct window w = {.h = 9, .w = 7, .c = 3, .kh = 3, .kw = 3, .sh = 2, .sw = 1, .pt = 1,
			   .pl = 1, .oh = 5, .ow = 7};
	check_ops("bf16", 0, 4, &w, 6);
	struct window one = {.h = 28, .w = 28, .c = 1, .kh = 4, .kw = 4, .sh = 4, .sw = 4,
			     .oh = 7, .ow = 7};
	check_ops("bf16", 1, 3, &one, 16);
	EXPECT(be->set_precision(be, PRECISION_FP32) == 0);
	free(a);
	free(b);
}

/* One product, or a batch of them with strides (attention's heads: a
 * batch of rows, operands ld apart), by both tables under bf16: oneDNN's
 * bf16 kernels against the rounded operands' fp32 product. */
static void check_bf16_product(int m, int n, int k, int ta, int tb, float beta, int batch,
			       int lda, int ldb, int ldc, size_t sa, size_t sb, size_t sc)
{
	const struct backend *dn = backend_cpu(), *own = backend_cpu_own();
	size_t na = (size_t)(batch - 1) * sa + (size_t)(ta ? k : m) * lda,
	       nb = (size_t)(batch - 1) * sb + (size_t)(tb ? n : k) * ldb,
	       nc = (size_t)(batch - 1) * sc + (size_t)m * ldc;
	struct rng r;
	rng_init(&r, 11, (uint64_t)(m * 131 + n * 7 + k));
	float *a = random_buf(&r, na), *b = random_buf(&r, nb), *c0 = random_buf(&r, nc);
	float *c[2] = {malloc(nc * sizeof(float)), malloc(nc * sizeof(float))};
	const struct backend *be[2] = {dn, own};
	for (int i = 0; i < 2; i++) {
		memcpy(c[i], c0, nc * sizeof(float)); /* beta 1 adds to it */
		if (batch == 1 && lda == (ta ? m : k) && ldb == (tb ? k : n) && ldc == n)
			be[i]->matmul(be[i], c[i], a, b, m, n, k, ta, tb, beta);
		else
			be[i]->matmul_batched(be[i], c[i], a, b, m, n, k, ta, tb, beta, batch, lda,
					      ldb, ldc, sa, sb, sc);
	}
	char desc[96];
	snprintf(desc, sizeof(desc), "bf16 %dx%dx%d ta %d tb %d beta %g batch %d", m, n, k, ta, tb,
		 beta, batch);
	expect_close("product", desc, 0, c[0], c[1], nc, 0, TOL);
	free(a);
	free(b);
	free(c0);
	free(c[0]);
	free(c[1]);
}

/* Attention's products of every head at once (matmul_heads) against a
 * head at a time by mtrain's own, the scores' and dq's shapes. */
static void check_bf16_heads(int ta, int tb)
{
	enum { T = 9, K = 4, D = 12, R = 3, H = 3 };
	const struct backend *dn = backend_cpu(), *own = backend_cpu_own();
	size_t td = T * D, htt = H * T * T, n_qk = R * td, n_p = R * htt;
	struct rng r;
	rng_init(&r, 12, (uint64_t)(ta * 2 + tb));
	/* scores (tb): p = q k^T; else dq = p k, or dk = p^T q (ta) */
	int m = T, n = tb ? T : K, k = tb ? K : T;
	struct batch2 bt = tb ? (struct batch2){R, H, td, td, htt, K, K, T * T}
			      : (struct batch2){R, H, htt, td, td, T * T, K, K};
	float *a = random_buf(&r, tb ? n_qk : n_p), *b = random_buf(&r, n_qk);
	size_t nc = tb ? n_p : n_qk;
	float *c[2] = {calloc(nc, sizeof(float)), calloc(nc, sizeof(float))};
	int lda = tb ? D : T, ldb = D, ldc = tb ? T : D;
	dn->matmul_heads(dn, c[0], a, b, m, n, k, ta, tb, 0.0f, lda, ldb, ldc, &bt);
	for (int h = 0; h < H; h++)
		own->matmul_batched(own, c[1] + h * bt.hc, a + h * bt.ha, b + h * bt.hb, m, n, k, ta,
				    tb, 0.0f, R, lda, ldb, ldc, bt.sa, bt.sb, bt.sc);
	expect_close("matmul_heads", tb ? "bf16 scores" : ta ? "bf16 dk" : "bf16 dq", 0, c[0],
		     c[1], nc, 0, TOL);
	EXPECT(c[0][nc - 1] != 0.0f); /* the last head of the last row written */
	free(a);
	free(b);
	free(c[0]);
	free(c[1]);
}

static void check_bf16_native(void)
{
	if (!cpu_dnnl_has_bf16()) {
		printf("test_onednn: this CPU's oneDNN has no bf16 kernels (no AVX512_BF16): "
		       "their checks not run here, the rounding's were\n");
		return;
	}
	const struct backend *be = backend_cpu();
	EXPECT(be->set_precision(be, PRECISION_BF16) == 0);
	check_bf16_product(7, 5, 300, 0, 0, 0.0f, 1, 300, 5, 5, 0, 0, 0);   /* dense */
	check_bf16_product(33, 17, 64, 1, 0, 0.0f, 1, 33, 17, 17, 0, 0, 0); /* its kernel's gradient */
	check_bf16_product(20, 40, 30, 0, 1, 1.0f, 1, 30, 30, 40, 0, 0, 0); /* dx, added to */
	/* attention, 2 heads of 4 on 9 tokens, 3 rows: scores, context, dq */
	enum { T = 9, K = 4, D = 8, R = 3, H = 2 };
	check_bf16_product(T, T, K, 0, 1, 0.0f, R, D, D, T, T * D, T * D, H * T * T);
	check_bf16_product(T, K, T, 0, 0, 0.0f, R, T, D, D, H * T * T, T * D, T * D);
	check_bf16_product(T, K, T, 1, 0, 0.0f, R, T, D, D, H * T * T, T * D, T * D);
	check_bf16_heads(0, 1);
	check_bf16_heads(0, 0);
	check_bf16_heads(1, 0);
	struct window w = {.h = 14, .w = 14, .c = 32, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
			   .pt = 1, .pl = 1, .oh = 14, .ow = 14};
	check_ops("bf16 native", 2, 3, &w, 32);
	EXPECT(be->set_precision(be, PRECISION_FP32) == 0);
}

/* The table's fp32 matmul (oneDNN's sgemm on AVX-512) against mtrain's
 * own (OpenBLAS), on dense's shapes: the ViT's tokens, the MLP's rows. */
static void check_sgemm(int m, int n, int k, int ta, int tb, float beta)
{
	const struct backend *dn = backend_cpu(), *own = backend_cpu_own();
	struct rng r;
	rng_init(&r, 11, (uint64_t)(m * 31 + n * 7 + k + ta * 2 + tb));
	float *a = random_buf(&r, (size_t)m * k), *b = random_buf(&r, (size_t)k * n);
	float *c0 = random_buf(&r, (size_t)m * n), *c1 = malloc((size_t)m * n * sizeof(float));
	memcpy(c1, c0, (size_t)m * n * sizeof(float));
	dn->matmul(dn, c0, a, b, m, n, k, ta, tb, beta);
	own->matmul(own, c1, a, b, m, n, k, ta, tb, beta);
	char desc[64];
	snprintf(desc, sizeof(desc), "matmul %dx%dx%d ta %d tb %d beta %g", m, n, k, ta, tb, beta);
	expect_close("c", desc, 0, c0, c1, (size_t)m * n, 0.0, 1e-5);
	free(a);
	free(b);
	free(c0);
	free(c1);
}

int main(void)
{
	if (!cpu_dnnl_sgemm_wins())
		printf("test_onednn: no AVX-512: the table's fp32 products are OpenBLAS's too\n");
	for (int t = 0; t < 4; t++) {
		check_sgemm(3136, 128, 64, t & 1, t >> 1, 0.0f);
		check_sgemm(128, 64, 3136, t & 1, t >> 1, 1.0f);
		check_sgemm(37, 11, 5, t & 1, t >> 1, 0.0f);
	}
	/* ResNet-20's three stages at 4 rows, the CNN's second layer, a
	 * prime number of rows (images of one position) */
	check_bn(4 * 28 * 28, 16, 0, ACT_RELU);
	check_bn(4 * 14 * 14, 32, 1, ACT_RELU);
	check_bn(4 * 7 * 7, 64, 1, ACT_GELU);
	check_bn(4 * 26 * 26, 32, 0, ACT_RELU);
	check_bn(1009, 8, 1, ACT_TANH);
	check_bf16_round();
	check_bf16();
	check_bf16_native();
	check_preset("fmnist-cnn.conf", 2);
	check_preset("fmnist-resnet.conf", 21);
	check_preset("fmnist-vit.conf", 1);
	const int img[3] = {9, 7, 3}, even[3] = {8, 8, 2}, one[3] = {7, 6, 1};
	check_model("conv2d:4:5:2:same,tanh,conv2d:3:3:1:valid,flatten,dense", img, 2);
	check_model("conv2d:4:3:2:valid,tanh,conv2d:5:1:2,globalavgpool,dense", even, 2);
	check_model("conv2d:3:2:1:same,batchnorm,gelu,conv2d:2:4:3:same,flatten,dense", even, 2);
	check_model("conv2d:3:2:2:valid,gelu,conv2d:4:3:1:same,maxpool2d:2,flatten,dense", one, 2);
	return unit_done("test_onednn");
}
