/* The CUDA backend's sequence ops against the CPU's (src/backend_cpu_seq.c)
 * on fresh random inputs, on the shapes the attention and layer-norm layers
 * give them and odd ones around those: the batched products as
 * src/layer_attn.c calls them (a head's columns of each row's tokens:
 * leading dimensions larger than the columns) and with every transpose,
 * fp32 within 1e-5 and bf16 within 2e-2 (further than 1e-4 on a shape of
 * multiples of 16); the masked softmax and its backward, apart and in
 * place as the layer runs them; layer norm, its backward's dx written
 * apart, over dy, or not at all; the embedding and its gradient with
 * repeated and out-of-range ids (the same sums in the same order: equal
 * bits). The GPU's column sums give the same bits when run twice. Skips
 * (77) without a GPU. */
#include "backend_pair.h"
#include "gpu.h"

#include <string.h>

/* One call of matmul_batched, as the contract states it. */
struct bmm {
	int m, n, k, ta, tb, lda, ldb, ldc, batch;
	size_t sa, sb, sc;
	float beta;
};

/* Floats a strided operand spans: batch matrices of rows rows, ld apart. */
static size_t span(int batch, size_t stride, int rows, int ld)
{
	return (size_t)(batch - 1) * stride + (size_t)rows * ld;
}

/* heads calls of p, call h with its operands at h * off[] (a head's
 * columns, or its (T,T) block), on both backends into the same c; c within
 * tol of the CPU's, and with bf16 on multiples of 16 further than
 * MIN_BF16. What the calls do not write stays as it was on both. */
static void check_bmm(const char *what, const struct bmm *p, int heads, const size_t off[3],
		      enum precision prec, double tol)
{
	size_t na = off[0] * (heads - 1) + span(p->batch, p->sa, p->ta ? p->k : p->m, p->lda);
	size_t nb = off[1] * (heads - 1) + span(p->batch, p->sb, p->tb ? p->n : p->k, p->ldb);
	size_t nc = off[2] * (heads - 1) + span(p->batch, p->sc, p->m, p->ldc);
	struct pair a = random_pair(na, -1, 1), b = random_pair(nb, -1, 1);
	struct pair c = random_pair(nc, -1, 1);
	gpu->set_precision(gpu, prec);
	for (int h = 0; h < heads; h++) {
		cpu->matmul_batched(cpu, c.c + h * off[2], a.c + h * off[0], b.c + h * off[1], p->m,
				    p->n, p->k, p->ta, p->tb, p->beta, p->batch, p->lda, p->ldb,
				    p->ldc, p->sa, p->sb, p->sc);
		gpu->matmul_batched(gpu, c.g + h * off[2], a.g + h * off[0], b.g + h * off[1], p->m,
				    p->n, p->k, p->ta, p->tb, p->beta, p->batch, p->lda, p->ldb,
				    p->ldc, p->sa, p->sb, p->sc);
	}
	gpu->set_precision(gpu, PRECISION_FP32);
	char name[160];
	snprintf(name, sizeof(name), "matmul_batched %s %s %dx%dx%d ta=%d tb=%d batch %d",
		 prec == PRECISION_BF16 ? "bf16" : "fp32", what, p->m, p->n, p->k, p->ta, p->tb,
		 p->batch);
	EXPECT_CLOSE(c, tol, name);
	if (prec == PRECISION_BF16 && p->m % 16 == 0 && p->n % 16 == 0 && p->k % 16 == 0) {
		double d = diff(c);
		if (d <= MIN_BF16)
			fprintf(stderr, "%s: relative difference %g from fp32: not computed in "
				"bf16\n", name, d);
		EXPECT(d > MIN_BF16);
	}
	release(a), release(b), release(c);
}

/* The attention's products for rows R of T tokens of width D, H heads of
 * K = D / H, each call as layer_attn.c makes it (the backward's dp = do
 * v^T, dq = ds k and dk = ds^T q have these shapes too). */
static void check_attn_products(int R, int T, int D, int H, enum precision prec, double tol)
{
	int K = D / H;
	size_t td = (size_t)T * D, tt = (size_t)T * T, htt = H * tt;
	const struct bmm scores = {.m = T, .n = T, .k = K, .ta = 0, .tb = 1, .lda = D, .ldb = D,
				   .ldc = T, .batch = R, .sa = td, .sb = td, .sc = htt};
	const struct bmm context = {.m = T, .n = K, .k = T, .ta = 0, .tb = 0, .lda = T, .ldb = D,
				    .ldc = D, .batch = R, .sa = htt, .sb = td, .sc = td};
	const struct bmm dv = {.m = T, .n = K, .k = T, .ta = 1, .tb = 0, .lda = T, .ldb = D,
			       .ldc = D, .batch = R, .sa = htt, .sb = td, .sc = td};
	check_bmm("q k^T", &scores, H, (size_t[3]){K, K, tt}, prec, tol);
	check_bmm("p v", &context, H, (size_t[3]){tt, K, K}, prec, tol);
	check_bmm("p^T do", &dv, H, (size_t[3]){tt, K, K}, prec, tol);
}

static void check_matmul_batched(enum precision prec, double tol)
{
	check_attn_products(3, 13, 20, 4, prec, tol);
	check_attn_products(4, 128, 256, 4, prec, tol);
	/* Every transpose, each leading dimension past its columns, strides
	 * past the matrices, beta accumulating. */
	for (int t = 0; t < 4; t++) {
		int ta = t & 1, tb = t >> 1 & 1, m = 7, n = 5, k = 9;
		int lda = (ta ? m : k) + 4, ldb = (tb ? k : n) + 3, ldc = n + 2;
		struct bmm p = {.m = m, .n = n, .k = k, .ta = ta, .tb = tb, .lda = lda, .ldb = ldb,
				.ldc = ldc, .batch = 4, .sa = (size_t)(ta ? k : m) * lda + 3,
				.sb = (size_t)(tb ? n : k) * ldb + 1, .sc = (size_t)m * ldc + 2,
				.beta = 0.5f};
		check_bmm("padded", &p, 1, (size_t[3]){0, 0, 0}, prec, tol);
	}
}

/* EXPECT_CLOSE, saying which op on which shape. */
#define EXPECT_CLOSE_ON(p, tol, op, shape)                                     \
	do {                                                                   \
		char what_[160];                                               \
		snprintf(what_, sizeof(what_), "%s %s", op, shape);            \
		EXPECT_CLOSE(p, tol, what_);                                   \
	} while (0)

/* The masked softmax on rows of queries over T keys (T of one key, not a
 * multiple of a warp, several warps' worth, the longest the layer takes;
 * rows not a multiple of a block's, and over 100k of them), plain and
 * causal, apart and in place; its backward from the CPU's probabilities,
 * apart and in place. */
static void check_softmax(void)
{
	/* {R * H, T} */
	const int shapes[][2] = {{6, 1}, {5, 37}, {2, 300}, {1, 2048}, {2801, 37}};
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		for (int causal = 0; causal < 2; causal++) {
			int T = shapes[s][1], rows = shapes[s][0] * T;
			size_t n = (size_t)rows * T;
			float scale = causal ? 0.125f : 1.0f;
			char shape[64];
			snprintf(shape, sizeof(shape), "%dx%d%s", rows, T, causal ? " causal" : "");
			struct pair x = random_pair(n, -8, 8), y = random_pair(n, 0, 1);
			cpu->softmax(cpu, y.c, x.c, rows, T, scale, causal);
			gpu->softmax(gpu, y.g, x.g, rows, T, scale, causal);
			EXPECT_CLOSE_ON(y, TOL_FP32, "softmax", shape);
			EXPECT_CLOSE_ON(x, 0.0, "softmax's input, untouched", shape);
			cpu->softmax(cpu, x.c, x.c, rows, T, scale, causal);
			gpu->softmax(gpu, x.g, x.g, rows, T, scale, causal);
			EXPECT_CLOSE_ON(x, TOL_FP32, "softmax in place", shape);
			/* The CPU backend's memory is the host's: y.c is the input. */
			struct pair p = upload(y.c, n), dy = random_pair(n, -1, 1);
			struct pair dx = random_pair(n, 0, 1);
			cpu->softmax_backward(cpu, dx.c, dy.c, p.c, rows, T, scale);
			gpu->softmax_backward(gpu, dx.g, dy.g, p.g, rows, T, scale);
			EXPECT_CLOSE_ON(dx, TOL_FP32, "softmax_backward", shape);
			cpu->softmax_backward(cpu, dy.c, dy.c, p.c, rows, T, scale);
			gpu->softmax_backward(gpu, dy.g, dy.g, p.g, rows, T, scale);
			EXPECT_CLOSE_ON(dy, TOL_FP32, "softmax_backward in place",
					shape);
			release(x), release(y), release(p), release(dy), release(dx);
		}
}

/* Whether the GPU's a and b (n each) hold the same bits. */
static int same_bits(const float *a, const float *b, size_t n)
{
	float *ha = malloc(n * sizeof(float)), *hb = malloc(n * sizeof(float));
	gpu->copy_out(gpu, ha, a, n * sizeof(float));
	gpu->copy_out(gpu, hb, b, n * sizeof(float));
	int same = !memcmp(ha, hb, n * sizeof(float));
	free(ha), free(hb);
	return same;
}

/* Layer norm on rows of C: many rows of a width not a multiple of a warp
 * (the column sums' partial tile), model widths, the widest, one column;
 * x centred away from 0 (the variance is taken about the mean). The backward
 * takes the CPU's mean and rstd on both; its dgamma and dbeta start as
 * garbage (overwritten) and come out the same bits when run again. */
static void check_layernorm(void)
{
	const int shapes[][2] = {{5003, 37}, {67, 768}, {9, 4096}, {5, 1}};
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		int rows = shapes[s][0], cols = shapes[s][1];
		size_t n = (size_t)rows * cols;
		float eps = s ? 1e-5f : 1e-3f;
		char shape[32];
		snprintf(shape, sizeof(shape), "%dx%d", rows, cols);
		struct pair x = random_pair(n, 2, 4), gamma = random_pair(cols, 0.5f, 1.5f);
		struct pair beta = random_pair(cols, -1, 1), y = random_pair(n, 0, 1);
		struct pair mean = random_pair(rows, 0, 1), rstd = random_pair(rows, 0, 1);
		cpu->ln_forward(cpu, y.c, mean.c, rstd.c, x.c, gamma.c, beta.c, rows, cols, eps);
		gpu->ln_forward(gpu, y.g, mean.g, rstd.g, x.g, gamma.g, beta.g, rows, cols, eps);
		EXPECT_CLOSE_ON(y, TOL_FP32, "ln_forward y", shape);
		EXPECT_CLOSE_ON(mean, TOL_FP32, "ln_forward mean", shape);
		EXPECT_CLOSE_ON(rstd, TOL_FP32, "ln_forward rstd", shape);
		struct pair m = upload(mean.c, rows), rs = upload(rstd.c, rows);
		struct pair dy = random_pair(n, -1, 1), dx = random_pair(n, 0, 1);
		struct pair dg[3], db[3];
		for (int i = 0; i < 3; i++)
			dg[i] = random_pair(cols, -9, 9), db[i] = random_pair(cols, -9, 9);
		/* dx apart */
		cpu->ln_backward(cpu, dx.c, dg[0].c, db[0].c, dy.c, x.c, m.c, rs.c, gamma.c, rows,
				 cols);
		gpu->ln_backward(gpu, dx.g, dg[0].g, db[0].g, dy.g, x.g, m.g, rs.g, gamma.g, rows,
				 cols);
		EXPECT_CLOSE_ON(dx, TOL_FP32, "ln_backward dx", shape);
		EXPECT_CLOSE_ON(dg[0], TOL_FP32, "ln_backward dgamma", shape);
		EXPECT_CLOSE_ON(db[0], TOL_FP32, "ln_backward dbeta", shape);
		/* no dx (the model's first layer) */
		cpu->ln_backward(cpu, NULL, dg[1].c, db[1].c, dy.c, x.c, m.c, rs.c, gamma.c, rows,
				 cols);
		gpu->ln_backward(gpu, NULL, dg[1].g, db[1].g, dy.g, x.g, m.g, rs.g, gamma.g, rows,
				 cols);
		EXPECT_CLOSE_ON(dg[1], TOL_FP32, "ln_backward dgamma, no dx", shape);
		EXPECT_CLOSE_ON(db[1], TOL_FP32, "ln_backward dbeta, no dx", shape);
		EXPECT(same_bits(dg[0].g, dg[1].g, cols));
		EXPECT(same_bits(db[0].g, db[1].g, cols));
		/* dx over dy: the sums still see dy */
		cpu->ln_backward(cpu, dy.c, dg[2].c, db[2].c, dy.c, x.c, m.c, rs.c, gamma.c, rows,
				 cols);
		gpu->ln_backward(gpu, dy.g, dg[2].g, db[2].g, dy.g, x.g, m.g, rs.g, gamma.g, rows,
				 cols);
		EXPECT_CLOSE_ON(dy, TOL_FP32, "ln_backward dx over dy", shape);
		EXPECT_CLOSE_ON(dg[2], TOL_FP32, "ln_backward dgamma, dx over dy", shape);
		EXPECT_CLOSE_ON(db[2], TOL_FP32, "ln_backward dbeta, dx over dy", shape);
		EXPECT(same_bits(dg[0].g, dg[2].g, cols));
		EXPECT(same_bits(dx.g, dy.g, n));
		for (int i = 0; i < 3; i++)
			release(dg[i]), release(db[i]);
		release(x), release(gamma), release(beta), release(y), release(mean);
		release(rstd), release(m), release(rs), release(dy), release(dx);
	}
}

/* The embedding and its gradient: n ids (floats) over a vocabulary, some
 * repeated often, a run of one id, ids past either end (clamped, as
 * embed_row says), the rest drawn. The gradient's sums are the CPU's, in
 * the CPU's order: the same bits; dtable starts as garbage. */
static void check_embedding(void)
{
	/* {vocab, cols, n}: odd sizes; fewer rows than the GPU's parts; the
	 * vocabulary's largest; the widest rows */
	const int shapes[][3] = {{1000, 37, 333}, {3, 70, 50}, {65536, 24, 4096}, {5, 4096, 40}};
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		int vocab = shapes[s][0], cols = shapes[s][1], n = shapes[s][2];
		float *ids = malloc((size_t)n * sizeof(float));
		for (int i = 0; i < n; i++) {
			long v = (long)rng_below(&r, (uint64_t)vocab);
			if (i % 7 == 0)
				v = vocab / 2;
			else if (i >= 10 && i < 20)
				v = 1 % vocab;
			else if (i % 13 == 0)
				v = i % 2 ? -3 : vocab + 5;
			ids[i] = (float)v;
		}
		struct pair id = upload(ids, n), table = random_pair((size_t)vocab * cols, -1, 1);
		struct pair y = random_pair((size_t)n * cols, 0, 1), dy = random_pair(y.n, -1, 1);
		struct pair dt = random_pair(table.n, -9, 9), again = random_pair(table.n, -9, 9);
		char shape[64];
		snprintf(shape, sizeof(shape), "%d ids, %d x %d", n, vocab, cols);
		cpu->embed(cpu, y.c, id.c, table.c, n, cols, vocab);
		gpu->embed(gpu, y.g, id.g, table.g, n, cols, vocab);
		EXPECT_CLOSE_ON(y, 0.0, "embed", shape);
		cpu->embed_backward(cpu, dt.c, dy.c, id.c, n, cols, vocab, 0);
		gpu->embed_backward(gpu, dt.g, dy.g, id.g, n, cols, vocab, 0);
		EXPECT_CLOSE_ON(dt, 0.0, "embed_backward", shape);
		gpu->embed_backward(gpu, again.g, dy.g, id.g, n, cols, vocab, 0);
		EXPECT(same_bits(dt.g, again.g, dt.n));
		/* Added to a table's gradient an unembed gave (tied): the same
		 * order of sums as the CPU's, from the value there. */
		struct pair tied = random_pair(table.n, -9, 9);
		cpu->embed_backward(cpu, tied.c, dy.c, id.c, n, cols, vocab, 1);
		gpu->embed_backward(gpu, tied.g, dy.g, id.g, n, cols, vocab, 1);
		EXPECT_CLOSE_ON(tied, 0.0, "embed_backward adding", shape);
		release(id), release(table), release(y), release(dy), release(dt), release(again);
		release(tied);
		free(ids);
	}
}

int main(void)
{
	gpu = gpu_or_skip("test_backend_seq", 0, 1);
	cpu = backend_cpu();
	rng_init(&r, 2025, 0);
	check_matmul_batched(PRECISION_FP32, TOL_FP32);
	check_matmul_batched(PRECISION_BF16, TOL_BF16);
	check_softmax();
	check_layernorm();
	check_embedding();
	return unit_done("test_backend_seq");
}
