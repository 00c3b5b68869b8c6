/* The CPU backend: the reference implementation of backend.h, its matrix
 * products in backend_cpu_mm.c (OpenBLAS sgemm, one thread per rank: ranks
 * are the parallelism), oneDNN's kernels where they measured faster
 * (backend_cpu_dnnl.h), and plain loops over the shared formulas of
 * mathfn.h for the rest. */
#include "backend.h"
#include "backend_cpu_bf16.h"
#include "backend_cpu_conv.h"
#include "backend_cpu_dnnl.h"
#include "backend_cpu_mm.h"
#include "backend_cpu_seq.h"
#include "check.h"

#include <cblas.h>
#include <float.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#endif

static void *cpu_alloc(const struct backend *be, size_t bytes)
{
	size_t rounded = (bytes + 63) / 64 * 64;
	void *p = aligned_alloc(64, rounded ? rounded : 64);
	ALLOC_CHECK(p);
	/* Touch every page now: a step must never fault in fresh pages. */
	memset(p, 0, rounded);
	return p;
}

static void cpu_free(const struct backend *be, void *p) { free(p); }

static void cpu_copy(const struct backend *be, void *dst, const void *src, size_t bytes)
{
	if (dst != src)
		memmove(dst, src, bytes);
}

/* a (n) = act(z) and dz (n) = act'(z) * da, each kind its own loop, the
 * kind a constant in it: act_fwd and act_bwd inline to a few float
 * operations (mt_expf and friends for gelu, silu, tanh's forms), which
 * the compiler vectorises. a may alias z, dz da. */
CPU_WIDE static void act_loop(float *a, const float *z, size_t n, enum act_kind act)
{
#define FWD_CASE(id, name)                                                     \
	case id:                                                               \
		for (size_t i = 0; i < n; i++)                                 \
			a[i] = act_fwd(id, z[i]);                              \
		return;
	switch (act) { ACT_KINDS(FWD_CASE) }
#undef FWD_CASE
}

CPU_WIDE static void act_back_loop(float *dz, const float *da, const float *z, size_t n,
			  enum act_kind act)
{
#define BWD_CASE(id, name)                                                     \
	case id:                                                               \
		for (size_t i = 0; i < n; i++)                                 \
			dz[i] = act_bwd(id, z[i], da[i]);                      \
		return;
	switch (act) { ACT_KINDS(BWD_CASE) }
#undef BWD_CASE
}

static void cpu_bias_act(const struct backend *be, float *a, float *z, const float *bias,
			 int rows, int cols, enum act_kind act)
{
	CPU_SPLIT((size_t)rows, cpu_rows_grain(cols), part, r0, r1, {
		for (size_t r = r0; r < r1; r++) {
			float *zr = z + r * cols;
			for (int j = 0; j < cols; j++)
				zr[j] += bias[j];
			if (a)
				act_loop(a + r * cols, zr, (size_t)cols, act);
		}
	});
}

static void cpu_act_backward(const struct backend *be, float *dz, const float *da, const float *z,
			     size_t n, enum act_kind act)
{
	CPU_SPLIT(n, CPU_SPLIT_FLOATS, part, lo, hi,
		  { act_back_loop(dz + lo, da + lo, z + lo, hi - lo, act); });
}

static void cpu_act_forward(const struct backend *be, float *a, const float *z, size_t n,
			    enum act_kind act)
{
	CPU_SPLIT(n, CPU_SPLIT_FLOATS, part, lo, hi, { act_loop(a + lo, z + lo, hi - lo, act); });
}

/* One row's units: its key made once (mathfn.h). */
CPU_WIDE static void dropout_row(float *y, const float *x, int cols, uint64_t key, float rate)
{
	dropout_units(y, x, cols, key, 0, rate);
}

static void cpu_dropout(const struct backend *be, float *y, const float *x, int rows, int cols,
			const struct dropout_key *k)
{
	CPU_SPLIT((size_t)rows, cpu_rows_grain(cols), part, r0, r1, {
		for (size_t r = r0; r < r1; r++)
			dropout_row(y + r * cols, x + r * cols, cols,
				    dropout_row_key(k->seed, k->step, k->row0 + r), k->rate);
	});
}

/* dbias's columns j0 .. j1 - 1: sums over the rows in order, sixteen
 * columns at a time in registers. */
CPU_WIDE static void bias_grad_cols(float *restrict dbias, const float *restrict dz, int rows,
				    int cols, int j0, int j1)
{
	int j = j0;
	for (; j + 16 <= j1; j += 16) {
		vf16 sum = {0};
		for (int r = 0; r < rows; r++)
			sum += *(const vf16 *)(dz + (size_t)r * cols + j);
		*(vf16 *)(dbias + j) = sum;
	}
	for (; j < j1; j++) {
		float sum = 0.0f;
		for (int r = 0; r < rows; r++)
			sum += dz[(size_t)r * cols + j];
		dbias[j] = sum;
	}
}

/* The threads share out the columns (each sums its own over every row, in
 * order), in whole vectors of 16. */
static void cpu_bias_grad(const struct backend *be, float *dbias, const float *dz, int rows,
			  int cols)
{
	CPU_SPLIT(cpu_col_vecs(cols), cpu_vecs_grain(rows), part, v0, v1, {
		bias_grad_cols(dbias, dz, rows, cols, cpu_vec_col(v0, cols), cpu_vec_col(v1, cols));
	});
}

/* Batch normalization. Column sums run over rows in order, in double, a
 * block of columns at a time (rows are long: every position of a batch). */
#define BN_BLOCK 64

CPU_WIDE static void cpu_col_moment(const struct backend *be, float *m, const float *x,
				    const float *center, int rows, int cols, float scale)
{
	for (int j0 = 0; j0 < cols; j0 += BN_BLOCK) {
		int nj = cols - j0 < BN_BLOCK ? cols - j0 : BN_BLOCK;
		double acc[BN_BLOCK] = {0};
		float c[BN_BLOCK] = {0};
		if (center)
			memcpy(c, center + j0, sizeof(float) * (size_t)nj);
		for (int r = 0; r < rows; r++) {
			const float *xr = x + (size_t)r * cols + j0;
			for (int j = 0; j < nj; j++)
				acc[j] += bn_moment_term(xr[j], c[j], center != NULL);
		}
		for (int j = 0; j < nj; j++)
			m[j0 + j] = (float)(acc[j] * scale);
	}
}

/* The block of channels from j0: how many (at most BN_BLOCK), with their
 * 1 / sqrt(var + eps) in inv. */
static int bn_block(float *inv, const float *var, int j0, int cols, float eps)
{
	int nj = cols - j0 < BN_BLOCK ? cols - j0 : BN_BLOCK;
	for (int j = 0; j < nj; j++)
		inv[j] = bn_invstd(var[j0 + j], eps);
	return nj;
}

/* dy[at, at + n) as an op with an activation fused after it takes it:
 * fused_act_dy (mathfn.h) into buf, relu's loop apart so that it
 * vectorises; dy itself without z. */
static inline const float *fused_row(const float *dy, const float *z, size_t at, int n,
				     enum act_kind act, float *buf)
{
	if (!z)
		return dy + at;
	if (act == ACT_RELU) /* both loaded unconditionally: no branch, vectorises */
		for (int j = 0; j < n; j++) {
			float d = dy[at + j];
			buf[j] = z[at + j] > 0.0f ? d : 0.0f;
		}
	else
		for (int j = 0; j < n; j++)
			buf[j] = fused_act_dy(act, z, dy, at + (size_t)j);
	return buf;
}

static void cpu_bn_forward(const struct backend *be, float *y, const float *x, const float *mean,
			   const float *var, const float *gamma, const float *beta, int rows,
			   int cols, float eps, float *a, enum act_kind act)
{
	for (int j0 = 0; j0 < cols; j0 += BN_BLOCK) {
		float inv[BN_BLOCK];
		int nj = bn_block(inv, var, j0, cols, eps);
		float *out = y ? y : a; /* without y, act applies in place in a */
		for (int r = 0; r < rows; r++) {
			size_t at = (size_t)r * cols + j0;
			for (int j = 0; j < nj; j++)
				out[at + j] = bn_y(x[at + j], mean[j0 + j], inv[j], gamma[j0 + j],
						   beta[j0 + j]);
			if (a)
				cpu_act_forward(be, a + at, out + at, (size_t)nj, act);
		}
	}
}


CPU_WIDE static void cpu_bn_backward_sums(const struct backend *be, float *sums,
					  const float *dy, const float *x, const float *mean,
					  const float *var, int rows, int cols, float eps,
					  const float *z, enum act_kind act)
{
	for (int j0 = 0; j0 < cols; j0 += BN_BLOCK) {
		float inv[BN_BLOCK], buf[BN_BLOCK];
		double dgamma[BN_BLOCK] = {0}, dbeta[BN_BLOCK] = {0};
		int nj = bn_block(inv, var, j0, cols, eps);
		for (int r = 0; r < rows; r++) {
			size_t at = (size_t)r * cols + j0;
			const float *d = fused_row(dy, z, at, nj, act, buf);
			for (int j = 0; j < nj; j++) {
				dgamma[j] += d[j] * bn_xhat(x[at + j], mean[j0 + j], inv[j]);
				dbeta[j] += d[j];
			}
		}
		for (int j = 0; j < nj; j++) {
			sums[j0 + j] = (float)dgamma[j];
			sums[cols + j0 + j] = (float)dbeta[j];
		}
	}
}

CPU_WIDE static void cpu_bn_backward(const struct backend *be, float *dx, const float *dy,
				     const float *x, const float *mean, const float *var,
				     const float *gamma, const float *sums, int rows, int cols,
				     float eps, float inv_n, const float *z, enum act_kind act)
{
	for (int j0 = 0; j0 < cols; j0 += BN_BLOCK) {
		float inv[BN_BLOCK], buf[BN_BLOCK];
		int nj = bn_block(inv, var, j0, cols, eps);
		for (int r = 0; r < rows; r++) {
			size_t at = (size_t)r * cols + j0;
			const float *d = fused_row(dy, z, at, nj, act, buf);
			for (int j = 0; j < nj; j++) {
				int c = j0 + j;
				float xhat = bn_xhat(x[at + j], mean[c], inv[j]);
				dx[at + j] = bn_dx(d[j], xhat, gamma[c], inv[j], sums[c], sums[cols + c],
						   inv_n);
			}
		}
	}
}

CPU_WIDE static void add_loop(float *y, const float *a, const float *b, size_t n, float *out,
			      enum act_kind act)
{
	enum { BLOCK = 256 }; /* the activation while the block is in L1 */
	for (size_t i0 = 0; i0 < n; i0 += BLOCK) {
		size_t m = n - i0 < BLOCK ? n - i0 : BLOCK;
		for (size_t i = i0; i < i0 + m; i++)
			y[i] = a[i] + b[i];
		if (out)
			act_loop(out + i0, y + i0, m, act);
	}
}

static void cpu_add(const struct backend *be, float *y, const float *a, const float *b, size_t n,
		    float *out, enum act_kind act)
{
	CPU_SPLIT(n, CPU_SPLIT_FLOATS, part, lo, hi,
		  { add_loop(y + lo, a + lo, b + lo, hi - lo, out ? out + lo : NULL, act); });
}

CPU_WIDE static void scale_loop(float *x, size_t n, float alpha)
{
	for (size_t i = 0; i < n; i++)
		x[i] *= alpha;
}

static void cpu_scale(const struct backend *be, float *x, size_t n, float alpha)
{
	CPU_SPLIT(n, CPU_SPLIT_FLOATS, part, lo, hi, { scale_loop(x + lo, hi - lo, alpha); });
}

static void cpu_xent(const struct backend *be, float *dlogits, float *stats, const float *logits,
		     const int32_t *labels, int rows, int classes, float scale)
{
	double loss = 0.0;
	int correct = 0;
	for (int r = 0; r < rows; r++) {
		int hit;
		loss += xent_row(logits + (size_t)r * classes, classes, labels[r], scale,
				 dlogits ? dlogits + (size_t)r * classes : NULL, &hit);
		correct += hit;
	}
	stats[0] += (float)loss;
	stats[1] += (float)correct;
}

CPU_WIDE static void optim_loop(float *w, const float *g, float *s1, float *s2, size_t n,
				const struct optim_hp *h)
{
	/* One loop per kind, the kind a constant in each: the switch inside
	 * optim_elem folds away and the loop vectorizes (6x faster than one
	 * loop switching per element). A local copy of the hyper-parameters,
	 * which stores to w cannot alias, stays in registers. */
	const struct optim_hp hp = *h;
#define OPTIM_LOOP(kind)                                                       \
	do {                                                                   \
		for (size_t i = 0; i < n; i++)                                 \
			w[i] = optim_elem(kind, &hp, i, w, g, s1, s2);         \
	} while (0)
#define OPTIM_CASE(id, ...)                                                    \
	case id: OPTIM_LOOP(id); break;
	switch (hp.kind) { OPTIM_KINDS(OPTIM_CASE) }
#undef OPTIM_CASE
#undef OPTIM_LOOP
}

/* Element-wise: the threads' shares give the same bits as one pass. */
static void cpu_optim_update(const struct backend *be, float *w, const float *g, float *s1,
			     float *s2, size_t n, const struct optim_hp *h)
{
	CPU_SPLIT(n, CPU_SPLIT_FLOATS, part, lo, hi, {
		optim_loop(w + lo, g + lo, s1 ? s1 + lo : NULL, s2 ? s2 + lo : NULL, hi - lo, h);
	});
}

CPU_WIDE static void ema_loop(float *shadow, const float *w, size_t n, float decay)
{
	for (size_t i = 0; i < n; i++)
		shadow[i] = ema_step(shadow[i], w[i], decay);
}

static void cpu_ema_update(const struct backend *be, float *shadow, const float *w, size_t n,
			   float decay)
{
	CPU_SPLIT(n, CPU_SPLIT_FLOATS, part, lo, hi,
		  { ema_loop(shadow + lo, w + lo, hi - lo, decay); });
}

static int cpu_nonfinite(const struct backend *be, const float *x, size_t n)
{
	unsigned bad = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned bits;
		memcpy(&bits, &x[i], sizeof(bits)); /* the float's bits, no aliasing */
		bad += nonfinite_bits(bits);
	}
	return bad != 0;
}

static double cpu_sumsq(const struct backend *be, const float *x, size_t n)
{
	double sum = 0.0;
	for (size_t i = 0; i < n; i++)
		sum += (double)x[i] * (double)x[i];
	return sum;
}

static void cpu_synchronize(const struct backend *be) {}

static void *cpu_stream(const struct backend *be) { return NULL; }

/* bf16: every product's operands rounded first (backend_cpu_bf16.h). */
static int cpu_set_precision(const struct backend *be, enum precision p)
{
	cpu_bf16 = p == PRECISION_BF16;
	return 0;
}

static int cpu_device_id(const struct backend *be, char *buf, int len) { return -1; }

/* The table is static; oneDNN's primitives go (made again on next use). */
static void cpu_close(const struct backend *be) { cpu_dnnl_release(); }

/* Denormal floats (below 1.2e-38) flushed to zero, in results and inputs,
 * on the calling thread, as TensorFlow does on the CPU: optimizer moments
 * of weights whose gradient is 0 (a dead relu unit's) decay through the
 * denormal range, where x86 arithmetic is about 100 times slower (Adam's
 * update took 7 of a CNN step's 28 ms). */
static void flush_denormals(void)
{
#if defined(__SSE__) || defined(__x86_64__)
	_mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ (bit 15) and DAZ (bit 6) */
#endif
}

/* 512 KiB of im2col windows a product: they stay in a core's L2 cache
 * between im2col writing them and sgemm packing them (ResNet-20's first
 * stage: one image's 784 windows of 144 values a product). Measured with
 * bench/bench_layers on ResNet-20 (AMD EPYC, 1 MiB L2): 64K to 256K floats
 * alike, 512K 15% slower, the whole batch 2.6x slower. */
#define CPU_COLS_BUDGET (128 * 1024)

const struct backend *backend_cpu(void)
{
	flush_denormals();
	static const struct backend cpu = {
		.name = "cpu",
		.memory = BACKEND_HOST,
		.cols_budget = CPU_COLS_BUDGET,
		.alloc = cpu_alloc,
		.free = cpu_free,
		.copy_in = cpu_copy,
		.copy_out = cpu_copy,
		.copy = cpu_copy,
		.alloc_host = cpu_alloc,
		.free_host = cpu_free,
		.copy_in_async = cpu_copy,
		.matmul = cpu_matmul,
		.bias_act = cpu_bias_act,
		.act_backward = cpu_act_backward,
		.act_forward = cpu_act_forward,
		.dropout = cpu_dropout,
		.im2col = cpu_im2col,
		.col2im = cpu_col2im,
		.conv = cpu_conv2d,
		.conv_backward_data = cpu_conv2d_backward_data,
		.conv_backward_weights = cpu_conv2d_backward_weights,
		.conv_kernels = cpu_dnnl_kernels,
		.matmul_kernels = cpu_matmul_kernels,
		.pool = cpu_pool,
		.pool_backward = cpu_pool_backward,
		.bias_grad = cpu_bias_grad,
		.col_moment = cpu_col_moment,
		.bn_forward = cpu_bn_forward,
		.bn_backward_sums = cpu_bn_backward_sums,
		.bn_backward = cpu_bn_backward,
		.bn_train_forward = cpu_bn_train_forward,
		.add = cpu_add,
		.scale = cpu_scale,
		.matmul_batched = cpu_matmul_batched,
		.matmul_heads = cpu_matmul_heads,
		.attn_forward = cpu_attn_forward,
		.attn_backward = cpu_attn_backward,
		.softmax = cpu_softmax,
		.softmax_backward = cpu_softmax_backward,
		.ln_forward = cpu_ln_forward,
		.ln_backward = cpu_ln_backward,
		.embed = cpu_embed,
		.embed_backward = cpu_embed_backward,
		.xent = cpu_xent,
		.optim_update = cpu_optim_update,
		.ema_update = cpu_ema_update,
		.nonfinite = cpu_nonfinite,
		.sumsq = cpu_sumsq,
		.synchronize = cpu_synchronize,
		.stream = cpu_stream,
		.set_precision = cpu_set_precision,
		.device_id = cpu_device_id,
		.close = cpu_close,
	};
	/* Ranks are the parallelism: one BLAS thread each, or 2 ranks on 2 cores
	 * would fight over 4 threads (backend_cpu_threads sets more). */
	static int threads_set;
	if (!threads_set) {
		threads_set = 1;
		openblas_set_num_threads(1);
	}
	return &cpu;
}

static const char *own_matmul_kernels(void) { return cpu_bf16 ? NULL : "OpenBLAS"; }

const struct backend *backend_cpu_own(void)
{
	static struct backend own;
	if (!own.name) {
		own = *backend_cpu();
		own.conv = NULL;
		own.conv_backward_data = NULL;
		own.conv_backward_weights = NULL;
		own.conv_kernels = NULL;
		own.matmul_kernels = own_matmul_kernels;
		own.bn_train_forward = NULL;
		own.matmul = cpu_matmul_own;
		own.matmul_batched = cpu_matmul_batched_own;
		own.matmul_heads = NULL;
	}
	return &own;
}
