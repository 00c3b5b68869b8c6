/* The CPU backend's layer ops against plain references: the product, the
 * bias's gradient, cross-entropy, dropout's masks, batch normalization's
 * moving statistics, pooling with ties, the window loops against the
 * formulas of mathfn.h, and im2col against a direct convolution. The
 * model's gradients through them are test_gradcheck.c. */
#include "backend.h"
#include "gradcheck.h"
#include "mathfn.h"
#include "model.h"
#include "unit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* matmul for every transpose combination and for beta 0 and 0.5, against a
 * naive triple loop in double. */
static void check_matmul(const struct backend *be)
{
	enum { M = 3, N = 4, K = 5 };
	float a[M * K], b[K * N], c0[M * N], c[M * N];
	struct rng r;
	rng_init(&r, 12, 0);
	fill_uniform(&r, a, M * K, -1.0f, 1.0f);
	fill_uniform(&r, b, K * N, -1.0f, 1.0f);
	fill_uniform(&r, c0, M * N, -1.0f, 1.0f);
	float *ba = be->alloc(be, sizeof(a)), *bb = be->alloc(be, sizeof(b));
	float *bc = be->alloc(be, sizeof(c));
	be->copy_in(be, ba, a, sizeof(a));
	be->copy_in(be, bb, b, sizeof(b));
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
			for (int bi = 0; bi < 2; bi++) {
				float beta = bi ? 0.5f : 0.0f;
				be->copy_in(be, bc, c0, sizeof(c0));
				be->matmul(be, bc, ba, bb, M, N, K, ta, tb, beta);
				be->copy_out(be, c, bc, sizeof(c));
				for (int i = 0; i < M; i++)
					for (int j = 0; j < N; j++) {
						double s = beta * c0[i * N + j];
						for (int p = 0; p < K; p++) {
							/* op(a) (M,K): a stored (K,M) when ta. */
							double av = ta ? a[p * M + i] : a[i * K + p];
							/* op(b) (K,N): b stored (N,K) when tb. */
							double bv = tb ? b[j * K + p] : b[p * N + j];
							s += av * bv;
						}
						EXPECT_NEAR(c[i * N + j], s, 1e-5);
					}
			}
	be->free(be, ba);
	be->free(be, bb);
	be->free(be, bc);
}

/* matmul_batched on attention's shapes (the small path of
 * backend_cpu_small.c) and on one too wide for it (OpenBLAS): every
 * transpose, beta 0 and 1, a head's columns of wider rows (ld > the
 * width), rows left over from the blocks of 4, columns from the panels of
 * 16. The small path promises the sum over p in order of float products,
 * so where it runs (b not transposed) the result is compared bit for bit
 * with that loop. */
static void check_matmul_batched(const struct backend *be, int m, int n, int k, int small)
{
	enum { BATCH = 3, PAD = 5 };
	struct rng r;
	rng_init(&r, 13, (uint64_t)(m * 10000 + n * 100 + k));
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
			for (int acc = 0; acc < 2; acc++) {
				int ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
				int lda = ca + PAD, ldb = cb + PAD, ldc = n + PAD;
				size_t sa = (size_t)ra * lda, sb = (size_t)rb * ldb, sc = (size_t)m * ldc;
				float *a = malloc(BATCH * sa * sizeof(float));
				float *b = malloc(BATCH * sb * sizeof(float));
				float *c0 = malloc(BATCH * sc * sizeof(float));
				float *c = malloc(BATCH * sc * sizeof(float));
				fill_uniform(&r, a, BATCH * sa, -1.0f, 1.0f);
				fill_uniform(&r, b, BATCH * sb, -1.0f, 1.0f);
				fill_uniform(&r, c0, BATCH * sc, -1.0f, 1.0f);
				memcpy(c, c0, BATCH * sc * sizeof(float));
				be->matmul_batched(be, c, a, b, m, n, k, ta, tb, acc ? 1.0f : 0.0f, BATCH,
						   lda, ldb, ldc, sa, sb, sc);
				int bad = 0;
				for (int t = 0; t < BATCH; t++)
					for (int i = 0; i < m; i++)
						for (int j = 0; j < ldc; j++) {
							size_t at = t * sc + (size_t)i * ldc + j;
							if (j >= n) { /* past the width: untouched */
								bad += c[at] != c0[at];
								continue;
							}
							float s = 0.0f;
							double d = 0.0;
							for (int p = 0; p < k; p++) {
								float av = ta ? a[t * sa + (size_t)p * lda + i]
									      : a[t * sa + (size_t)i * lda + p];
								float bv = tb ? b[t * sb + (size_t)j * ldb + p]
									      : b[t * sb + (size_t)p * ldb + j];
								float prod = av * bv;
								s += prod;
								d += (double)av * bv;
							}
							if (acc) {
								s = c0[at] + s;
								d += c0[at];
							}
							bad += small && !tb ? c[at] != s : fabs(c[at] - d) > 1e-5 * (1 + k);
						}
				if (bad)
					fprintf(stderr, "matmul_batched %dx%dx%d ta=%d tb=%d beta %d: %d "
							"values wrong\n", m, n, k, ta, tb, acc, bad);
				EXPECT(bad == 0);
				free(a);
				free(b);
				free(c0);
				free(c);
			}
}

/* xent on a 2x3 batch whose softmax is exact:
 *   row 0 logits {0, ln 2, ln 5}, label 2: p = {1/8, 2/8, 5/8}, loss ln(8/5), argmax 2: correct
 *   row 1 logits {0, ln 3, ln 4}, label 0: p = {1/8, 3/8, 4/8}, loss ln 8,     argmax 2: wrong
 * loss sum = ln 12.8 = 2.54944517, correct = 1. */
static void check_xent(const struct backend *be)
{
	const float logits[6] = {0.0f, logf(2.0f), logf(5.0f), 0.0f, logf(3.0f), logf(4.0f)};
	const int32_t labels[2] = {2, 0};
	/* scale 0.5 * (p - onehot) */
	const float want_d[6] = {0.0625f, 0.125f, -0.1875f, -0.4375f, 0.1875f, 0.25f};
	float *bl = be->alloc(be, sizeof(logits)), *bd = be->alloc(be, sizeof(logits));
	float *bs = be->alloc(be, 2 * sizeof(float));
	int32_t *by = be->alloc(be, sizeof(labels));
	be->copy_in(be, bl, logits, sizeof(logits));
	be->copy_in(be, by, labels, sizeof(labels));
	float stats[2], d[6];

	be->xent(be, bd, bs, bl, by, 2, 3, 0.5f);
	be->copy_out(be, stats, bs, sizeof(stats));
	be->copy_out(be, d, bd, sizeof(d));
	EXPECT_NEAR(stats[0], 2.54944517, 1e-6);
	EXPECT(stats[1] == 1.0f);
	for (int i = 0; i < 6; i++)
		EXPECT_NEAR(d[i], want_d[i], 1e-6);

	/* Without dlogits the same stats, added to what stats held. */
	float start[2] = {-1.0f, 2.0f};
	be->copy_in(be, bs, start, sizeof(start));
	be->xent(be, NULL, bs, bl, by, 2, 3, 0.5f);
	be->copy_out(be, stats, bs, sizeof(stats));
	EXPECT_NEAR(stats[0], 2.54944517 - 1.0, 1e-6);
	EXPECT(stats[1] == 3.0f);
	const float zero[2] = {0.0f, 0.0f};
	be->copy_in(be, bs, zero, sizeof(zero));

	/* Large logits must not overflow: {1000, 0, -1000} label 0 has loss ~0. */
	const float big[3] = {1000.0f, 0.0f, -1000.0f};
	be->copy_in(be, bl, big, sizeof(big));
	be->xent(be, bd, bs, bl, by + 1, 1, 3, 1.0f);
	be->copy_out(be, stats, bs, sizeof(stats));
	be->copy_out(be, d, bd, 3 * sizeof(float));
	EXPECT(isfinite(stats[0]) && stats[0] >= 0.0f && stats[0] < 1e-6f);
	EXPECT_NEAR(d[0], 0.0, 1e-6);
	be->free(be, bl);
	be->free(be, bd);
	be->free(be, bs);
	be->free(be, by);
}

/* bias_grad overwrites dbias with the column sums of dz. */
static void check_bias_grad(const struct backend *be)
{
	enum { R = 3, C = 5 };
	float dz[R * C], db[C];
	struct rng r;
	rng_init(&r, 11, 0);
	for (int i = 0; i < R * C; i++)
		dz[i] = uniform(&r, -2.0f, 2.0f);
	float *bdz = be->alloc(be, sizeof(dz)), *bdb = be->alloc(be, sizeof(db));
	const float junk[C] = {9, 9, 9, 9, 9};
	be->copy_in(be, bdz, dz, sizeof(dz));
	be->copy_in(be, bdb, junk, sizeof(junk));
	be->bias_grad(be, bdb, bdz, R, C);
	be->copy_out(be, db, bdb, sizeof(db));
	for (int j = 0; j < C; j++)
		EXPECT_NEAR(db[j], (double)dz[j] + dz[C + j] + dz[2 * C + j], 1e-6);
	be->free(be, bdz);
	be->free(be, bdb);
}

/* Dropout's masks: about rate of the units dropped, the rest scaled by
 * 1 / (1 - rate); a function of (seed, step, row of the global batch,
 * unit) only, so rows split across ranks get the masks they would get
 * together; backward (the same op on dy) uses the same mask. */
static void check_dropout(const struct backend *be)
{
	enum { R = 64, C = 100 };
	static float x[R * C], y[R * C], part[R * C];
	for (int i = 0; i < R * C; i++)
		x[i] = 1.0f + (float)(i % 7);
	struct dropout_key k = {.seed = 42, .step = 9, .row0 = 0, .rate = 0.3f};
	be->dropout(be, y, x, R, C, &k);
	int dropped = 0, scaled = 1;
	for (int i = 0; i < R * C; i++) {
		dropped += y[i] == 0.0f;
		scaled &= y[i] == 0.0f || y[i] == x[i] * (1.0f / 0.7f);
	}
	EXPECT(scaled);
	EXPECT(dropped > 0.27 * R * C && dropped < 0.33 * R * C);
	/* Each unit mathfn.h's dropout_scale (the GPU's, unit by unit), though
	 * the CPU makes a row's key once; neighbours drop independently (both
	 * of a pair of adjacent units, and the same unit of adjacent rows,
	 * about 0.09 of the time) */
	int formula = 1, pairs = 0, stacked = 0;
	for (int r = 0; r < R; r++)
		for (int j = 0; j < C; j++) {
			int i = r * C + j;
			formula &= y[i] == x[i] * dropout_scale(42, 9, (uint64_t)r, (uint64_t)j, 0.3f);
			pairs += j + 1 < C && y[i] == 0.0f && y[i + 1] == 0.0f;
			stacked += r + 1 < R && y[i] == 0.0f && y[i + C] == 0.0f;
		}
	EXPECT(formula);
	EXPECT(pairs > 0.07 * R * (C - 1) && pairs < 0.11 * R * (C - 1));
	EXPECT(stacked > 0.07 * (R - 1) * C && stacked < 0.11 * (R - 1) * C);
	/* Rows 10.. on their own (row0 = 10): the same masks. */
	struct dropout_key k10 = k;
	k10.row0 = 10;
	be->dropout(be, part, x + 10 * C, R - 10, C, &k10);
	EXPECT(memcmp(part, y + 10 * C, sizeof(float) * (R - 10) * C) == 0);
	/* Another step: other masks. */
	struct dropout_key k2 = k;
	k2.step = 10;
	be->dropout(be, part, x, R, C, &k2);
	EXPECT(memcmp(part, y, sizeof(float) * R * C) != 0);
	/* In place, as backward runs it. */
	memcpy(part, x, sizeof(x));
	be->dropout(be, part, part, R, C, &k);
	EXPECT(memcmp(part, y, sizeof(y)) == 0);
	/* Rate 0 is the identity. */
	struct dropout_key none = k;
	none.rate = 0.0f;
	be->dropout(be, part, x, R, C, &none);
	EXPECT(memcmp(part, x, sizeof(x)) == 0);
}

/* batchnorm's moving statistics after a step: momentum 0.99 towards the
 * batch's mean and its Bessel-corrected variance; evaluation normalises
 * with them. */
static void check_bn_moving(const struct backend *be)
{
	struct layer_spec spec[2];
	int n = 0;
	struct model m;
	const int in[3] = {1, 1, IN};
	EXPECT(layer_spec_parse("batchnorm,dense", "test", spec, 2, &n) == 0);
	EXPECT(model_plan(&m, spec, n, in, CLASSES, 1) == 0);
	model_alloc(&m, be, ROWS);
	EXPECT(m.reg.n == 6 && m.reg.n_trainable == 4); /* gamma, beta, kernel, bias */
	EXPECT(!strcmp(m.reg.p[0].name, "batch_normalization/gamma"));
	EXPECT(!strcmp(m.reg.p[4].name, "batch_normalization/moving_mean"));
	EXPECT(!strcmp(m.reg.p[5].name, "batch_normalization/moving_variance"));
	EXPECT(m.reg.trainable <= m.reg.p[4].offset);
	struct rng r;
	rng_init(&r, 3, 7);
	float *w = calloc(m.reg.total, sizeof(float));
	model_glorot(&m, 5, w);
	const struct layer *bn = &m.layer[0];
	for (int j = 0; j < IN; j++) {
		EXPECT(w[bn->var[0] + j] == 1.0f && w[bn->var[1] + j] == 0.0f); /* gamma, beta */
		EXPECT(w[bn->var[2] + j] == 0.0f && w[bn->var[3] + j] == 1.0f); /* moving */
		w[bn->var[0] + j] = uniform(&r, 0.5f, 1.5f);
		w[bn->var[1] + j] = uniform(&r, -0.5f, 0.5f);
	}
	be->copy_in(be, m.w, w, m.reg.total * sizeof(float));
	float x[ROWS * IN];
	int32_t y[ROWS] = {0, 1, 2};
	for (int i = 0; i < ROWS * IN; i++)
		x[i] = uniform(&r, -2.0f, 3.0f);
	model_set_batch(&m, x, y, ROWS);
	model_forward(&m, ROWS, 1, 1.0f);
	model_update_state(&m);
	for (int j = 0; j < IN; j++) {
		double mean = 0, var = 0;
		for (int i = 0; i < ROWS; i++)
			mean += x[i * IN + j] / (double)ROWS;
		for (int i = 0; i < ROWS; i++)
			var += (x[i * IN + j] - mean) * (x[i * IN + j] - mean) / (double)ROWS;
		/* training: normalised with the batch's (biased) variance */
		for (int i = 0; i < ROWS; i++) {
			double want = w[bn->var[0] + j] * (x[i * IN + j] - mean) / sqrt(var + 1e-3) +
				      w[bn->var[1] + j];
			EXPECT_NEAR(bn->y[i * IN + j], want, 1e-5);
		}
		EXPECT_NEAR(m.w[bn->var[2] + j], 0.01 * mean, 1e-6);
		EXPECT_NEAR(m.w[bn->var[3] + j], 0.99 + 0.01 * var * ROWS / (ROWS - 1), 1e-6);
	}
	/* evaluating: the moving statistics */
	model_forward(&m, ROWS, 0, 0.0f);
	for (int i = 0; i < ROWS * IN; i++) {
		int j = i % IN;
		double want = w[bn->var[0] + j] * (x[i] - m.w[bn->var[2] + j]) /
				      sqrt(m.w[bn->var[3] + j] + 1e-3) + w[bn->var[1] + j];
		EXPECT_NEAR(bn->y[i], want, 1e-5);
	}
	free(w);
	model_free(&m);
}

/* Max pooling with ties: the window's first max takes the whole gradient,
 * as in TF; average pooling shares it among the positions inside. */
static void check_pool_ties(const struct backend *be)
{
	/* One row, 2x2x1, all equal: one 2x2 window. */
	const float x[4] = {0.5f, 0.5f, 0.5f, 0.5f}, dy[1] = {3.0f};
	struct window w = {.h = 2, .w = 2, .c = 1, .kh = 2, .kw = 2, .sh = 2, .sw = 2, .oh = 1,
			   .ow = 1};
	float y[1], dx[4];
	be->pool(be, y, x, 1, &w, 1);
	EXPECT(y[0] == 0.5f);
	be->pool_backward(be, dx, dy, x, 1, &w, 1);
	EXPECT(dx[0] == 3.0f && dx[1] == 0.0f && dx[2] == 0.0f && dx[3] == 0.0f);
	be->pool_backward(be, dx, dy, x, 1, &w, 0);
	EXPECT(dx[0] == 0.75f && dx[1] == 0.75f && dx[2] == 0.75f && dx[3] == 0.75f);
	/* Overlapping windows (3x1 input, size 2 stride 1): the middle value
	 * is the max of both and gets both gradients. */
	const float x3[3] = {0.0f, 1.0f, 0.0f}, dy2[2] = {2.0f, 5.0f};
	struct window w3 = {.h = 3, .w = 1, .c = 1, .kh = 2, .kw = 1, .sh = 1, .sw = 1, .oh = 2,
			    .ow = 1};
	float dx3[3];
	be->pool_backward(be, dx3, dy2, x3, 1, &w3, 1);
	EXPECT(dx3[0] == 0.0f && dx3[1] == 7.0f && dx3[2] == 0.0f);
}

/* The CPU's window loops (im2col, col2im, pooling) against the
 * per-element formulas of mathfn.h (the GPU's): forward bit for bit,
 * backward to rounding (it adds overlapping windows in another order), over
 * the windows of w (with POOL_C channels: one and more than the CPU's block of
 * 64 are tried), and ties. dx starts as NaN: every value must be written. */
enum { ROWS_P = 2, POOL_C = 70 };
static void check_pool_formulas(const struct backend *be, struct window w)
{
	size_t in = (size_t)ROWS_P * w.h * w.w * POOL_C,
	       out = (size_t)ROWS_P * w.oh * w.ow * POOL_C;
	float *x = malloc(in * sizeof(float)), *dx = malloc(in * sizeof(float));
	float *y = malloc(out * sizeof(float)), *dy = malloc(out * sizeof(float));
	struct rng r;
	rng_init(&r, 9, 1);
	for (size_t i = 0; i < in; i++) /* a coarse grid: many ties */
		x[i] = (float)(int)uniform(&r, -3, 3);
	for (size_t i = 0; i < out; i++)
		dy[i] = uniform(&r, -1, 1);
	/* im2col and col2im too, over the same windows, and with one channel */
	for (int c = POOL_C; c >= 1; c -= POOL_C - 1) {
		w.c = c;
		size_t n_in = (size_t)ROWS_P * w.h * w.w * c;
		size_t n_cols = (size_t)ROWS_P * w.oh * w.ow * w.kh * w.kw * c;
		float *cols = malloc(n_cols * sizeof(float));
		be->im2col(be, cols, x, ROWS_P, &w);
		int same = 1;
		for (size_t i = 0; i < n_cols; i++)
			same &= cols[i] == win_im2col(x, &w, i);
		EXPECT(same);
		be->col2im(be, dx, cols, ROWS_P, &w);
		for (size_t i = 0; i < n_in; i++)
			EXPECT_NEAR(dx[i], win_col2im(cols, &w, i), 1e-5);
		free(cols);
	}
	w.c = POOL_C;
	for (int max = 0; max < 2; max++) {
		be->pool(be, y, x, ROWS_P, &w, max);
		int same = 1;
		for (size_t i = 0; i < out; i++)
			same &= y[i] == win_pool(x, &w, max, i);
		EXPECT(same);
		for (size_t i = 0; i < in; i++)
			dx[i] = NAN;
		be->pool_backward(be, dx, dy, x, ROWS_P, &w, max);
		for (size_t i = 0; i < in; i++)
			EXPECT_NEAR(dx[i], win_pool_bwd(dy, x, &w, max, i), 1e-6);
	}
	free(x), free(dx), free(y), free(dy);
}

/* im2col with 'same' padding against a direct convolution of one row:
 * the product of cols and a kernel is the convolution, and col2im of the
 * windows of ones counts how many windows hold each input. */
static void check_im2col(const struct backend *be)
{
	enum { H = 4, W = 5, C = 2, K = 3, F = 2 };
	struct window w = {.h = H, .w = W, .c = C, .kh = K, .kw = K, .sh = 2, .sw = 2, .pt = 1,
			   .pl = 1, .oh = 2, .ow = 3};
	float x[H * W * C], k[K * K * C * F], cols[2 * 3 * K * K * C], y[2 * 3 * F];
	struct rng r;
	rng_init(&r, 5, 1);
	for (int i = 0; i < H * W * C; i++)
		x[i] = uniform(&r, -1, 1);
	for (int i = 0; i < K * K * C * F; i++)
		k[i] = uniform(&r, -1, 1);
	be->im2col(be, cols, x, 1, &w);
	be->matmul(be, y, cols, k, 6, F, K * K * C, 0, 0, 0.0f);
	for (int oy = 0; oy < 2; oy++)
		for (int ox = 0; ox < 3; ox++)
			for (int f = 0; f < F; f++) {
				double want = 0;
				for (int ky = 0; ky < K; ky++)
					for (int kx = 0; kx < K; kx++)
						for (int c = 0; c < C; c++) {
							int iy = oy * 2 + ky - 1, ix = ox * 2 + kx - 1;
							if (iy < 0 || iy >= H || ix < 0 || ix >= W)
								continue;
							want += (double)x[(iy * W + ix) * C + c] *
								k[((ky * K + kx) * C + c) * F + f];
						}
				EXPECT_NEAR(y[(oy * 3 + ox) * F + f], want, 1e-5);
			}
	for (int i = 0; i < 2 * 3 * K * K * C; i++)
		cols[i] = 1.0f;
	float counts[H * W * C];
	be->col2im(be, counts, cols, 1, &w);
	/* Windows start at rows -1, 1 and columns -1, 1, 3: input (1, 1) is
	 * in the four windows of rows -1, 1 and columns -1, 1; (1, 3) in four
	 * too (columns 1, 3); (2, 2) only in the one at (1, 1); (3, 4) only in
	 * the one at (1, 3). */
	EXPECT(counts[(1 * W + 1) * C] == 4.0f);
	EXPECT(counts[(1 * W + 3) * C + 1] == 4.0f);
	EXPECT(counts[(2 * W + 2) * C + 1] == 1.0f);
	EXPECT(counts[(3 * W + 4) * C] == 1.0f);
}

/* gelu's exact form (mathfn.h's Phi by Abramowitz and Stegun, sharing its
 * exponential with the derivative) against libm's erf in double, on
 * [-9, 9]: within 2e-7 (1 + |x|), the bound the formula's 1.5e-7 on erf
 * allows once scaled by x / 2. */
static void check_gelu_exact(void)
{
	double worst = 0.0;
	for (int i = -900; i <= 900; i++) {
		float x = (float)i / 100.0f;
		double phi = 0.5 * (1.0 + erf((double)x / sqrt(2.0)));
		double pdf = exp(-0.5 * (double)x * x) / sqrt(2.0 * M_PI);
		double tol = 2e-7 * (1.0 + fabs((double)x));
		double e1 = fabs(act_fwd(ACT_GELU, x) - (double)x * phi) / tol;
		double e2 = fabs(act_bwd(ACT_GELU, x, 1.0f) - (phi + (double)x * pdf)) / tol;
		worst = fmax(worst, fmax(e1, e2));
	}
	if (worst > 1.0)
		fprintf(stderr, "gelu: %.2f times its tolerance from erf\n", worst);
	EXPECT(worst <= 1.0);
}

int main(void)
{
	const struct backend *be = backend_cpu();
	check_matmul(be);
	/* the ViT's heads (49 tokens, key_dim 16), both ways round; odd rows
	 * and a panel's tail; the widest small one; too wide for it */
	check_matmul_batched(be, 49, 49, 16, 1);
	check_matmul_batched(be, 49, 16, 49, 1);
	check_matmul_batched(be, 7, 21, 3, 1);
	check_matmul_batched(be, 5, 64, 64, 1);
	check_matmul_batched(be, 6, 30, 5, 1);
	check_matmul_batched(be, 9, 70, 12, 0);
	check_gelu_exact();
	check_bias_grad(be);
	check_xent(be);
	check_dropout(be);
	check_bn_moving(be);
	check_pool_ties(be);
	/* padded, overlapping and clipped windows */
	check_pool_formulas(be, (struct window){.h = 7, .w = 6, .c = POOL_C, .kh = 3, .kw = 2, .sh = 2,
						.sw = 1, .pt = 1, .pl = 0, .oh = 4, .ow = 5});
	/* windows apart (max pooling's own backward): tiling the input, as
	 * maxpool2d:2 does; clipped, with columns no window covers */
	check_pool_formulas(be, (struct window){.h = 6, .w = 4, .c = POOL_C, .kh = 2, .kw = 2, .sh = 2,
						.sw = 2, .pt = 0, .pl = 0, .oh = 3, .ow = 2});
	check_pool_formulas(be, (struct window){.h = 7, .w = 6, .c = POOL_C, .kh = 2, .kw = 2, .sh = 2,
						.sw = 3, .pt = 1, .pl = 0, .oh = 4, .ow = 2});
	check_im2col(be);
	return unit_done("test_layer_ops");
}
