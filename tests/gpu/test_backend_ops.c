/* Every op of the CUDA backend but the sequence ops (test_backend_seq.c)
 * against the CPU backend on fresh random inputs: fp32 within 1e-5
 * relative (normwise: max |gpu - cpu| / max |cpu|, TF32 off), bf16 matrix
 * products within 2e-2 but further than 1e-4 (on the shapes tensor cores
 * take: a bf16 that silently computed in fp32 would be within 1e-5), every
 * optimizer kind. Skips (77) without a GPU. */
#include "backend_pair.h"
#include "gpu.h"

#include <string.h>

/* Every optimizer kind, counted from the one table (kinds.h). */
#define COUNT_ONE(...) +1
enum { OPTIM_COUNT = 0 OPTIM_KINDS(COUNT_ONE) };
#undef COUNT_ONE

/* Products within tol of the CPU's; bf16 ones whose sizes are multiples
 * of 16 (the model's, as tensor cores take them) also further than
 * MIN_BF16. Smaller or odd shapes may run on other kernels, so only their
 * upper bound is checked. */
static void check_matmul(enum precision prec, double tol)
{
	const int shapes[][3] = {{64, 256, 784}, {784, 256, 64}, {7, 5, 3}, {129, 33, 257}};
	gpu->set_precision(gpu, prec);
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		for (int t = 0; t < 4; t++) {
			int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
			struct pair a = random_pair((size_t)m * k, -1, 1);
			struct pair b = random_pair((size_t)k * n, -1, 1);
			struct pair c = random_pair((size_t)m * n, -1, 1);
			float beta = t == 3 ? 1.0f : 0.0f; /* beta = 1 accumulates */
			cpu->matmul(cpu, c.c, a.c, b.c, m, n, k, t & 1, t >> 1 & 1, beta);
			gpu->matmul(gpu, c.g, a.g, b.g, m, n, k, t & 1, t >> 1 & 1, beta);
			char what[96];
			snprintf(what, sizeof(what), "matmul %s %dx%dx%d ta=%d tb=%d",
				 prec == PRECISION_BF16 ? "bf16" : "fp32", m, n, k, t & 1, t >> 1 & 1);
			EXPECT_CLOSE(c, tol, what);
			if (prec == PRECISION_BF16 && m % 16 == 0 && n % 16 == 0 && k % 16 == 0) {
				double d = diff(c);
				if (d <= MIN_BF16)
					fprintf(stderr, "%s: relative difference %g from fp32: "
						"not computed in bf16\n", what, d);
				EXPECT(d > MIN_BF16);
			}
			release(a);
			release(b);
			release(c);
		}
	gpu->set_precision(gpu, PRECISION_FP32);
}

/* The windowed ops of conv2d and the pools, on odd sizes with padding and
 * overlapping windows: the GPU's gather against the CPU's loops. */
static void check_windows(void)
{
	const int rows = 3;
	struct window w = {.h = 9, .w = 7, .c = 5, .kh = 3, .kw = 3, .sh = 2, .sw = 1, .pt = 1,
			   .pl = 1, .oh = 5, .ow = 7};
	size_t in = (size_t)rows * w.h * w.w * w.c, cols = (size_t)rows * w.oh * w.ow * 9 * w.c;
	size_t out = (size_t)rows * w.oh * w.ow * w.c;
	struct pair x = random_pair(in, -1, 1), c = random_pair(cols, 0, 1);
	cpu->im2col(cpu, c.c, x.c, rows, &w);
	gpu->im2col(gpu, c.g, x.g, rows, &w);
	EXPECT_CLOSE(c, 0.0, "im2col");
	struct pair dc = random_pair(cols, -1, 1), dx = random_pair(in, 0, 1);
	cpu->col2im(cpu, dx.c, dc.c, rows, &w);
	gpu->col2im(gpu, dx.g, dc.g, rows, &w);
	EXPECT_CLOSE(dx, TOL_FP32, "col2im");
	for (int max = 0; max < 2; max++) {
		struct pair y = random_pair(out, 0, 1), dy = random_pair(out, -1, 1);
		cpu->pool(cpu, y.c, x.c, rows, &w, max);
		gpu->pool(gpu, y.g, x.g, rows, &w, max);
		EXPECT_CLOSE(y, TOL_FP32, max ? "maxpool" : "avgpool");
		cpu->pool_backward(cpu, dx.c, dy.c, x.c, rows, &w, max);
		gpu->pool_backward(gpu, dx.g, dy.g, x.g, rows, &w, max);
		EXPECT_CLOSE(dx, TOL_FP32, max ? "maxpool backward" : "avgpool backward");
		release(y), release(dy);
	}
	release(x), release(c), release(dc), release(dx);
}

/* Batch normalization's ops on many rows (every position of a batch) and a
 * channel count that is not a multiple of the GPU's block. */
static void check_batchnorm(void)
{
	const int rows = 5000, cols = 37;
	size_t n = (size_t)rows * cols;
	struct pair x = random_pair(n, -2, 3), mean = random_pair(cols, 0, 1);
	struct pair var = random_pair(cols, 0, 1), gamma = random_pair(cols, 0.5f, 1.5f);
	struct pair beta = random_pair(cols, -1, 1), y = random_pair(n, 0, 1);
	struct pair dy = random_pair(n, -1, 1), sums = random_pair(2 * (size_t)cols, 0, 1);
	struct pair dx = random_pair(n, 0, 1);
	cpu->col_moment(cpu, mean.c, x.c, NULL, rows, cols, 1.0f / rows);
	gpu->col_moment(gpu, mean.g, x.g, NULL, rows, cols, 1.0f / rows);
	EXPECT_CLOSE(mean, TOL_FP32, "col_moment mean");
	cpu->col_moment(cpu, var.c, x.c, mean.c, rows, cols, 1.0f / rows);
	gpu->col_moment(gpu, var.g, x.g, mean.g, rows, cols, 1.0f / rows);
	EXPECT_CLOSE(var, TOL_FP32, "col_moment variance");
	/* Plain, then with each activation fused after it (forward: a as well;
	 * backward: act'(y) applied to dy inside both passes). */
	struct pair a = random_pair(n, 0, 1);
	for (int act = -1; act < ACT_COUNT; act++) {
		enum act_kind k = act < 0 ? ACT_RELU : (enum act_kind)act;
		cpu->bn_forward(cpu, y.c, x.c, mean.c, var.c, gamma.c, beta.c, rows, cols, 1e-3f,
				act < 0 ? NULL : a.c, k);
		gpu->bn_forward(gpu, y.g, x.g, mean.g, var.g, gamma.g, beta.g, rows, cols, 1e-3f,
				act < 0 ? NULL : a.g, k);
		EXPECT_CLOSE(y, TOL_FP32, "bn_forward");
		EXPECT_CLOSE(a, TOL_FP32, "bn_forward's fused activation");
		const float *zc = act < 0 ? NULL : y.c, *zg = act < 0 ? NULL : y.g;
		cpu->bn_backward_sums(cpu, sums.c, dy.c, x.c, mean.c, var.c, rows, cols, 1e-3f, zc, k);
		gpu->bn_backward_sums(gpu, sums.g, dy.g, x.g, mean.g, var.g, rows, cols, 1e-3f, zg, k);
		EXPECT_CLOSE(sums, TOL_FP32, "bn_backward_sums");
		cpu->bn_backward(cpu, dx.c, dy.c, x.c, mean.c, var.c, gamma.c, sums.c, rows, cols,
				 1e-3f, 1.0f / rows, zc, k);
		gpu->bn_backward(gpu, dx.g, dy.g, x.g, mean.g, var.g, gamma.g, sums.g, rows, cols,
				 1e-3f, 1.0f / rows, zg, k);
		EXPECT_CLOSE(dx, TOL_FP32, "bn_backward");
	}
	release(a);
	cpu->scale(cpu, dx.c, n, 0.37f);
	gpu->scale(gpu, dx.g, n, 0.37f);
	EXPECT_CLOSE(dx, TOL_FP32, "scale");
	release(x), release(mean), release(var), release(gamma), release(beta), release(y);
	release(dy), release(sums), release(dx);
}

static void check_elementwise(void)
{
	const int rows = 67, cols = 130;
	size_t n = (size_t)rows * cols;
	for (int act = ACT_RELU; act < ACT_COUNT; act++) {
		struct pair z = random_pair(n, -3, 3), a = random_pair(n, 0, 1);
		struct pair b = random_pair(cols, -1, 1), da = random_pair(n, -1, 1);
		struct pair dz = random_pair(n, 0, 1);
		cpu->bias_act(cpu, a.c, z.c, b.c, rows, cols, (enum act_kind)act);
		gpu->bias_act(gpu, a.g, z.g, b.g, rows, cols, (enum act_kind)act);
		EXPECT_CLOSE(z, TOL_FP32, "bias_act z");
		EXPECT_CLOSE(a, TOL_FP32, "bias_act a");
		cpu->act_backward(cpu, dz.c, da.c, z.c, n, (enum act_kind)act);
		gpu->act_backward(gpu, dz.g, da.g, z.g, n, (enum act_kind)act);
		EXPECT_CLOSE(dz, TOL_FP32, "act_backward");
		cpu->act_forward(cpu, a.c, z.c, n, (enum act_kind)act);
		gpu->act_forward(gpu, a.g, z.g, n, (enum act_kind)act);
		EXPECT_CLOSE(a, TOL_FP32, "act_forward");
		release(z), release(a), release(b), release(da), release(dz);
	}
	/* Dropout: the same masks, bit for bit, from the shared formula. */
	struct pair x = random_pair(n, -1, 1), y = random_pair(n, 0, 1);
	struct dropout_key k = {.seed = 7, .step = 1234, .row0 = 5, .rate = 0.4f};
	cpu->dropout(cpu, y.c, x.c, rows, cols, &k);
	gpu->dropout(gpu, y.g, x.g, rows, cols, &k);
	EXPECT_CLOSE(y, 0.0, "dropout");
	release(x), release(y);
	check_windows();
	struct pair dz = random_pair(n, -1, 1), db = random_pair(cols, 0, 1);
	struct pair sum = random_pair(n, 0, 1), other = random_pair(n, -1, 1);
	struct pair out = random_pair(n, 0, 1);
	cpu->add(cpu, sum.c, dz.c, other.c, n, out.c, ACT_GELU); /* an add fused with gelu */
	gpu->add(gpu, sum.g, dz.g, other.g, n, out.g, ACT_GELU);
	EXPECT_CLOSE(sum, 0.0, "add");
	EXPECT_CLOSE(out, TOL_FP32, "add's fused activation");
	cpu->add(cpu, sum.c, sum.c, dz.c, n, NULL, ACT_RELU); /* in place, as the model accumulates */
	gpu->add(gpu, sum.g, sum.g, dz.g, n, NULL, ACT_RELU);
	EXPECT_CLOSE(sum, 0.0, "add in place");
	release(sum), release(other), release(out);
	cpu->bias_grad(cpu, db.c, dz.c, rows, cols);
	gpu->bias_grad(gpu, db.g, dz.g, rows, cols);
	EXPECT_CLOSE(db, TOL_FP32, "bias_grad");
	release(dz), release(db);
}

static void check_xent(void)
{
	const int rows = 300, classes = 10;
	struct pair logits = random_pair((size_t)rows * classes, -4, 4);
	struct pair dl = random_pair((size_t)rows * classes, 0, 1);
	float zero[2] = {0, 0}, hc[2], hg[2];
	struct pair stats = upload(zero, 2);
	int32_t y[rows];
	for (int i = 0; i < rows; i++)
		y[i] = (int32_t)rng_below(&r, classes);
	int32_t *yc = cpu->alloc(cpu, sizeof(y)), *yg = gpu->alloc(gpu, sizeof(y));
	cpu->copy_in(cpu, yc, y, sizeof(y));
	gpu->copy_in(gpu, yg, y, sizeof(y));
	cpu->xent(cpu, dl.c, stats.c, logits.c, yc, rows, classes, 1.0f / rows);
	gpu->xent(gpu, dl.g, stats.g, logits.g, yg, rows, classes, 1.0f / rows);
	EXPECT_CLOSE(dl, TOL_FP32, "xent dlogits");
	cpu->copy_out(cpu, hc, stats.c, sizeof(hc));
	gpu->copy_out(gpu, hg, stats.g, sizeof(hg));
	EXPECT_NEAR(hg[0], hc[0], TOL_FP32);
	EXPECT(hg[1] == hc[1]);
	release(logits), release(dl), release(stats);
	cpu->free(cpu, yc);
	gpu->free(gpu, yg);
}

static void check_optim_ema(void)
{
	const size_t n = 100003;
	for (int kind = 0; kind < OPTIM_COUNT; kind++) {
		struct optim_hp hp = {.kind = (enum optim_kind)kind, .lr = 1e-2f, .momentum = 0.9f,
				      .nesterov = kind == OPTIM_MOMENTUM, .beta1 = 0.9f,
				      .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.01f};
		struct pair w = random_pair(n, -1, 1), g = random_pair(n, -1, 1);
		struct pair s1 = random_pair(n, -0.1f, 0.1f), s2 = random_pair(n, 0, 0.01f);
		for (long t = 1; t <= 3; t++) {
			hp.bc1 = 1.0f - powf(hp.beta1, (float)t);
			hp.bc2 = 1.0f - powf(hp.beta2, (float)t);
			cpu->optim_update(cpu, w.c, g.c, s1.c, s2.c, n, &hp);
			gpu->optim_update(gpu, w.g, g.g, s1.g, s2.g, n, &hp);
		}
		char what[3][64];
		for (int i = 0; i < 3; i++)
			snprintf(what[i], sizeof(what[i]), "optimizer %s %s", optim_names[kind],
				 i == 0 ? "weights" : i == 1 ? "slot 1" : "slot 2");
		EXPECT_CLOSE(w, TOL_FP32, what[0]);
		EXPECT_CLOSE(s1, TOL_FP32, what[1]);
		EXPECT_CLOSE(s2, TOL_FP32, what[2]);
		release(w), release(g), release(s1), release(s2);
	}
	struct pair shadow = random_pair(n, -1, 1), w = random_pair(n, -1, 1);
	for (int t = 0; t < 5; t++) {
		cpu->ema_update(cpu, shadow.c, w.c, n, 0.9f);
		gpu->ema_update(gpu, shadow.g, w.g, n, 0.9f);
	}
	EXPECT_CLOSE(shadow, TOL_FP32, "ema_update");
	/* copy within device memory */
	gpu->copy(gpu, shadow.g, w.g, n * sizeof(float));
	cpu->copy(cpu, shadow.c, w.c, n * sizeof(float));
	EXPECT(diff(shadow) == 0.0);
	release(shadow), release(w);
	/* Pinned staging: asynchronous copy in, then back out. */
	float *pinned = gpu->alloc_host(gpu, n * sizeof(float)), *back = malloc(n * sizeof(float));
	float *dev = gpu->alloc(gpu, n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		pinned[i] = (float)i;
	gpu->copy_in_async(gpu, dev, pinned, n * sizeof(float));
	gpu->copy_out(gpu, back, dev, n * sizeof(float));
	EXPECT(!memcmp(back, pinned, n * sizeof(float)));
	/* nonfinite: none, then a NaN, then an Inf at the last element (the
	 * kernel's tail), each as the CPU says. */
	for (size_t i = 0; i < n; i++)
		pinned[i] = (float)i - 1e6f;
	for (int k = 0; k < 3; k++) {
		if (k)
			pinned[n - 1] = k == 1 ? NAN : INFINITY;
		gpu->copy_in(gpu, dev, pinned, n * sizeof(float));
		EXPECT(gpu->nonfinite(gpu, dev, n) == (k != 0));
		EXPECT(cpu->nonfinite(cpu, pinned, n) == (k != 0));
	}
	gpu->free_host(gpu, pinned);
	gpu->free(gpu, dev);
	free(back);
}

int main(void)
{
	gpu = gpu_or_skip("test_backend_ops", 0, 1);
	cpu = backend_cpu();
	rng_init(&r, 2024, 0);
	EXPECT(gpu->stream(gpu) != NULL);
	EXPECT(gpu->set_precision(gpu, PRECISION_BF16) == 0);
	check_matmul(PRECISION_FP32, TOL_FP32);
	check_matmul(PRECISION_BF16, TOL_BF16);
	check_elementwise();
	check_batchnorm();
	check_xent();
	check_optim_ema();
	return unit_done("test_backend_ops");
}
