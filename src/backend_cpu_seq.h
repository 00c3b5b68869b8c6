/* The CPU backend's sequence ops (attention's softmax, layer
 * normalization, embeddings; the batched products are backend_cpu.c's), defined in backend_cpu_seq.c
 * and registered in backend_cpu.c's table. Same signatures as their
 * struct backend slots (backend.h). */
#pragma once
#include "backend.h"

#include <omp.h>
#include <string.h>

/* A hot loop compiled three times, for AVX-512 (16 floats at a time), AVX2
 * (8) and the baseline (SSE2's 4), the CPU choosing at load time. The same
 * float operations in each (no FMA is enabled: -std=c11 contracts nothing,
 * and no sum is reordered): the same bits, faster where the CPU is wider.
 * Measured on Zen 4 (2026-12-05): gelu's loops 1.8x faster in the AVX-512
 * clone than in AVX2's; with the small products' 16-wide blocks
 * (backend_cpu_small.c), the ViT's step 5% faster, its checkpoint the
 * same. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CPU_WIDE __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CPU_WIDE
#endif

/* Where one rank owns several cores (backend_cpu_threads' count over 1),
 * its own loops share out their rows as oneDNN and OpenBLAS share out a
 * product: CPU_SPLIT(n, grain, part, lo, hi, BLOCK) runs BLOCK once a
 * thread, part its number and [lo, hi) its contiguous share of [0, n);
 * once, over [0, n), with one thread or under two grains of work
 * (cpu_split_parts), and then in no OpenMP region: libgomp allocates a
 * team even for one thread, a malloc a loop, which under AddressSanitizer
 * made a 1-rank CNN's evaluation of 10,000 images take 105 s, not 3. Each
 * row's work is the same whichever thread does it, and no sum crosses the
 * shares: the same bits on any number of threads. Not inside a CPU_WIDE
 * function (its clones' outlined blocks). */
int cpu_split_parts(size_t n, size_t grain);
/* The threads CPU_SPLIT shares out over (backend_cpu_threads'; defined, with
 * cpu_split_parts, in backend_cpu_split.c). */
void cpu_split_set_threads(int n);
#define CPU_PRAGMA(x) _Pragma(#x)
#define CPU_SPLIT(n, grain, part, lo, hi, ...)                                 \
	do {                                                                   \
		size_t n_ = (n);                                               \
		int parts_ = cpu_split_parts(n_, (grain));                     \
		if (parts_ > 1) {                                              \
			CPU_PRAGMA(omp parallel num_threads(parts_))           \
			{                                                      \
				int part = omp_get_thread_num();               \
				int of_ = omp_get_num_threads();               \
				size_t lo = n_ * part / of_;                   \
				size_t hi = n_ * (part + 1) / of_;             \
				__VA_ARGS__                                    \
			}                                                      \
		} else {                                                       \
			int part = 0;                                          \
			size_t lo = 0, hi = n_;                                \
			(void)part;                                            \
			__VA_ARGS__                                            \
		}                                                              \
	} while (0)

/* The least work a thread takes (CPU_SPLIT's grain): floats of an
 * element-wise loop, or the rows of cols floats that make as many. */
#define CPU_SPLIT_FLOATS 16384
static inline size_t cpu_rows_grain(int cols) { return CPU_SPLIT_FLOATS / ((size_t)cols + 1) + 1; }

/* Column sums over rows share out their columns in vectors of 16: how many
 * vectors cols make, vector v's first column (cols past the last), and the
 * least vectors a thread takes for rows rows. */
static inline size_t cpu_col_vecs(int cols) { return ((size_t)cols + 15) / 16; }
static inline int cpu_vec_col(size_t v, int cols) { return v * 16 < (size_t)cols ? (int)v * 16 : cols; }
static inline size_t cpu_vecs_grain(int rows) { return CPU_SPLIT_FLOATS / 16 / ((size_t)rows + 1) + 1; }

/* Eight floats at any alignment (GCC's vector extension, Clang's too):
 * 256-bit instructions in CPU_WIDE's AVX2 and AVX-512 clones, two 128-bit
 * ones in the baseline. For the loops GCC's vectoriser leaves scalar. */
typedef float vf8 __attribute__((vector_size(32), aligned(4), may_alias));

/* Sixteen floats the same way: one 512-bit register in CPU_WIDE's AVX-512
 * clone, two 256-bit ones in its AVX2 clone. */
typedef float vf16 __attribute__((vector_size(64), aligned(4), may_alias));

/* A row's sums and maxima in LANES running values, one per column mod
 * LANES, then added in a fixed tree: the loops vectorise (a single running
 * sum would be a chain the compiler must not reorder), and the order of
 * the additions is the same on every run and every CPU. */
#define LANES 8

static inline float lanes_total(const float *acc)
{
	return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

/* The sum of a (n) times b (n), or of a alone with b NULL. */
static inline float row_dot(const float *a, const float *b, int n)
{
	float acc[LANES] = {0};
	int j = 0;
	if (b) {
		for (; j + LANES <= n; j += LANES)
			for (int l = 0; l < LANES; l++)
				acc[l] += a[j + l] * b[j + l];
		for (; j < n; j++)
			acc[j % LANES] += a[j] * b[j];
	} else {
		for (; j + LANES <= n; j += LANES)
			for (int l = 0; l < LANES; l++)
				acc[l] += a[j + l];
		for (; j < n; j++)
			acc[j % LANES] += a[j];
	}
	return lanes_total(acc);
}

/* Eight 32-bit integers, for vf8's comparisons and bit patterns. */
typedef int vi8 __attribute__((vector_size(32), aligned(4), may_alias));

/* Eight copies of f; a where m's lane is set (all ones, as comparisons
 * give), else b. Macros, as expf8 takes a pointer: no vector crosses a
 * call, whose convention differs between CPU_WIDE's clones. */
#define SPLAT8(f) ((vf8){(f), (f), (f), (f), (f), (f), (f), (f)})
#define SELECT8(m, a, b) ((vf8)(((vi8)(a) & (m)) | ((vi8)(b) & ~(m))))

/* *x = mt_expf (mathfn.h) of eight floats: the same operations in the
 * same order, so the same bits as eight calls. */
static inline __attribute__((always_inline)) void expf8(vf8 *xp)
{
	vf8 x = *xp, lo = SPLAT8(-87.0f), hi = SPLAT8(88.0f);
	x = SELECT8(x < lo, lo, x);
	x = SELECT8(x > hi, hi, x);
	vf8 n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
	vf8 r = (x - n * 0.693145751953125f) - n * 1.42860676533018704e-6f;
	vf8 p = SPLAT8(1.0f / 5040.0f);
	p = p * r + 1.0f / 720.0f;
	p = p * r + 1.0f / 120.0f;
	p = p * r + 1.0f / 24.0f;
	p = p * r + 1.0f / 6.0f;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
	vi8 e = (__builtin_convertvector(n, vi8) + 127) << 23;
	*xp = p * (vf8)e;
}

/* The most rows softmax_rows takes at once. */
#define SOFTMAX_BLOCK 64

/* Rows of a softmax (cpu_softmax's): row i of y (ld ldy) from row i of x
 * (ld ldx), query q0 + i, the keys after it masked when causal; y may be
 * x. In three passes over the block (the maxima, the exponentials and
 * sums, the scaling), so that one row's chain of max, exp, sum and
 * division overlaps the next row's rather than waiting on it. Eight keys
 * at a time (a row's last few one by one); lane l of a row's sum adds keys
 * l, l + 8, ... in order, then lanes_total, as row_dot. */
static inline __attribute__((always_inline)) void softmax_rows(float *y, size_t ldy,
							       const float *x, size_t ldx,
							       int rows, int cols, int q0,
							       float scale, int causal)
{
	float mx[SOFTMAX_BLOCK], inv[SOFTMAX_BLOCK];
	for (int i = 0; i < rows; i++) {
		const float *xr = x + i * ldx;
		int n = causal ? q0 + i + 1 : cols, j; /* the keys the query sees */
		float x0 = xr[0] * scale;
		vf8 top = SPLAT8(x0); /* a maximum: any order gives it */
		for (j = 0; j + LANES <= n; j += LANES) {
			vf8 s = *(const vf8 *)(xr + j) * scale;
			top = SELECT8(s > top, s, top);
		}
		float m = top[0];
		for (int l = 1; l < LANES; l++)
			m = top[l] > m ? top[l] : m;
		for (; j < n; j++)
			m = xr[j] * scale > m ? xr[j] * scale : m;
		mx[i] = m;
	}
	for (int i = 0; i < rows; i++) {
		const float *xr = x + i * ldx;
		float *yr = y + i * ldy;
		int n = causal ? q0 + i + 1 : cols, j;
		vf8 sum8 = {0};
		for (j = 0; j + LANES <= n; j += LANES) {
			vf8 e = *(const vf8 *)(xr + j) * scale - mx[i];
			expf8(&e);
			*(vf8 *)(yr + j) = e;
			sum8 += e;
		}
		float sum[LANES];
		memcpy(sum, &sum8, sizeof(sum));
		for (; j < n; j++) {
			yr[j] = mt_expf(xr[j] * scale - mx[i]);
			sum[j % LANES] += yr[j];
		}
		inv[i] = 1.0f / lanes_total(sum);
	}
	for (int i = 0; i < rows; i++) {
		float *yr = y + i * ldy;
		int n = causal ? q0 + i + 1 : cols, j;
		for (j = 0; j + LANES <= n; j += LANES)
			*(vf8 *)(yr + j) *= inv[i];
		for (; j < n; j++)
			yr[j] *= inv[i];
		for (; j < cols; j++) /* the mask's keys */
			yr[j] = 0.0f;
	}
}

/* y (n) = x times dropout's multipliers for units unit0 .. unit0 + n - 1
 * of the row whose key is key (dropout_scale_at): the dropout op's rows
 * and the fused heads' alike. y may be x. */
static inline __attribute__((always_inline)) void dropout_units(float *y, const float *x, int n,
								uint64_t key, uint64_t unit0,
								float rate)
{
	for (int j = 0; j < n; j++)
		y[j] = x[j] * dropout_scale_at(key, unit0 + (uint64_t)j, rate);
}

/* One row of cpu_softmax_backward: dxr (cols) from dyr and the output yr;
 * dxr may be dyr. */
static inline __attribute__((always_inline)) void
softmax_backward_row(float *dxr, const float *dyr, const float *yr, int cols,
					float scale)
{
	float dot = row_dot(dyr, yr, cols);
	for (int j = 0; j < cols; j++)
		dxr[j] = softmax_dx(yr[j], dyr[j], dot, scale);
}

void cpu_softmax(const struct backend *be, float *y, const float *x, int rows, int cols,
		 float scale, int causal);
void cpu_softmax_backward(const struct backend *be, float *dx, const float *dy, const float *y,
			  int rows, int cols, float scale);
void cpu_ln_forward(const struct backend *be, float *y, float *mean, float *rstd, const float *x,
		    const float *gamma, const float *beta, int rows, int cols, float eps);
void cpu_ln_backward(const struct backend *be, float *dx, float *dgamma, float *dbeta,
		     const float *dy, const float *x, const float *mean, const float *rstd,
		     const float *gamma, int rows, int cols);
void cpu_embed(const struct backend *be, float *y, const float *ids, const float *table, int n,
	       int cols, int vocab);
void cpu_embed_backward(const struct backend *be, float *dtable, const float *dy,
			const float *ids, int n, int cols, int vocab, int add);
/* Attention's heads fused (backend.h's attn_forward, attn_backward),
 * defined in backend_cpu_attn.c: 0 under --precision bf16, whose products
 * round their operands (the layer then composes them). */
int cpu_attn_forward(const struct backend *be, float *o, float *p, float *pd, const float *q,
		     const float *k, const float *v, const struct attn_dims *d);
int cpu_attn_backward(const struct backend *be, float *dq, float *dk, float *dv,
		      const float *dout, const float *q, const float *k, const float *v,
		      const float *p, const float *pd, const struct attn_dims *d);
