/* Attention's heads fused on the CPU (backend.h's attn_forward and
 * attn_backward). A row's keys (forward) or values (backward) are
 * transposed once into [D, Tp] (Tp: T rounded up to whole panels of 16,
 * the rest zeros), so that every one of a head's six products takes its b
 * as stored: the small path (backend_cpu_small.c) with no packing, where
 * the composed path hands q_h k_h^T and do_h v_h^T to OpenBLAS. A head's
 * scores (T x Tp) sit in a scratch that stays in cache from their product
 * through the softmax to the next product. Under the causal mask the
 * products go in strips of 16 queries, each over the keys it may see:
 * half the work at long contexts. Dropout on the probabilities, while
 * training, is applied a strip at a time with the dropout op's masks
 * (dropout_scale_at, unit h T T + i T + j of a row's), the keys a query
 * cannot see skipped (their probabilities are 0 either way).
 *
 * Letters as in layer_attn.c: R rows of T tokens, D = H K. The same
 * formulas as the composed path (softmax_rows, softmax_backward_row), sums
 * in order as the small path's: the same bits from run to run. */
#include "backend_cpu_bf16.h"
#include "backend_cpu_mm.h"
#include "backend_cpu_seq.h"
#include "backend_cpu_small.h"
#include "check.h"

#include <stdlib.h>

#define PANEL 16 /* the small path's panel, and a causal strip's queries */

static int whole_panels(int n) { return (n + PANEL - 1) / PANEL * PANEL; }

/* Scratch for one row a thread (CPU_SPLIT shares out the rows): the
 * transposed keys or values and a head's scores, kept from call to call
 * (a rank's backend runs one call at a time). */
static float *scratch(size_t floats)
{
	static float *buf;
	static size_t have;
	if (floats > have) {
		free(buf);
		buf = xmalloc(floats * sizeof(float));
		have = floats;
	}
	return buf;
}

/* t (D, Tp) = x (T, D) transposed, zeros in the columns past T. */
static void transpose(float *t, const float *x, int T, int D, int Tp)
{
	for (int d = 0; d < D; d++) {
		float *td = t + (size_t)d * Tp;
		for (int i = 0; i < T; i++)
			td[i] = x[(size_t)i * D + d];
		for (int i = T; i < Tp; i++)
			td[i] = 0.0f;
	}
}

/* c (m, n) = op(a) (m, k) @ b (k, n), b as stored: the small path, which
 * packs nothing when n is whole panels; else the backend's own choice
 * (the small path, or OpenBLAS for a k too long for its panel). */
static void product(float *c, const float *a, const float *b, int m, int n, int k, int ta, int lda,
		    int ldb, int ldc)
{
	if (n % PANEL == 0)
		cpu_small_matmul(c, a, b, m, n, k, ta, 0, lda, ldb, ldc);
	else
		cpu_matmul_batched_own(NULL, c, a, b, m, n, k, ta, 0, 0.0f, 1, lda, ldb, ldc, 0, 0,
				       0);
}

/* The queries i0 .. i1 - 1 of a strip, and the keys they see: all (Tp),
 * or under the causal mask those before i1 (whole panels). */
struct strip {
	int i0, i1, keys;
};

static struct strip strip_at(const struct attn_dims *d, int i0, int Tp)
{
	int len = d->causal ? PANEL : d->T, i1 = i0 + len < d->T ? i0 + len : d->T;
	return (struct strip){i0, i1, d->causal ? whole_panels(i1) : Tp};
}

/* Queries i0 .. i1 - 1 of one head's probabilities under dropout: y =
 * x times the unit's multiplier, over the keys each query sees (the
 * others: 0 where zero_rest, else left as they are). unit0: the head's
 * first unit in its row's H T T. */
static inline __attribute__((always_inline)) void
drop_rows(float *y, size_t ldy, const float *x, size_t ldx, int i0, int i1,
	  const struct attn_dims *d, uint64_t key, uint64_t unit0, int zero_rest)
{
	for (int i = i0; i < i1; i++) {
		int n = d->causal ? i + 1 : d->T;
		float *yi = y + (size_t)i * ldy;
		const float *xi = x + (size_t)i * ldx;
		uint64_t u = unit0 + (uint64_t)i * (uint64_t)d->T;
		dropout_units(yi, xi, n, key, u, d->drop.rate);
		for (int j = n; zero_rest && j < d->T; j++)
			yi[j] = 0.0f;
	}
}

/* One head of one row: p and pd (T, T) and o_h (T, K; ld D) from q_h and
 * v_h (ld D) and the transposed keys kt (K, Tp); s (T, Tp) scratch; key
 * and unit0 the row's dropout key and the head's first unit. */
CPU_WIDE static void head_forward(float *o, float *p, float *pd, const float *q, const float *kt,
				  const float *v, float *s, const struct attn_dims *d, int D, int Tp,
				  uint64_t key, uint64_t unit0)
{
	int T = d->T, K = d->K;
	for (int i0 = 0; i0 < T;) {
		struct strip st = strip_at(d, i0, Tp);
		int m = st.i1 - st.i0;
		cpu_small_matmul(s + (size_t)i0 * Tp, q + (size_t)i0 * D, kt, m, st.keys, K, 0, 0, D,
				 Tp, Tp);
		for (int i = st.i0; i < st.i1; i += SOFTMAX_BLOCK)
			softmax_rows(p + (size_t)i * T, (size_t)T, s + (size_t)i * Tp, (size_t)Tp,
				     st.i1 - i < SOFTMAX_BLOCK ? st.i1 - i : SOFTMAX_BLOCK, T, i,
				     d->scale, d->causal);
		if (d->drop.rate > 0.0f)
			drop_rows(pd, (size_t)T, p, (size_t)T, st.i0, st.i1, d, key, unit0, 1);
		/* pd's columns past i1 are the mask's zeros: the sum stops there */
		product(o + (size_t)i0 * D, pd + (size_t)i0 * T, v, m, K, d->causal ? st.i1 : T, 0,
			T, D, D);
		i0 = st.i1;
	}
}

/* Where row r's head h lies: its columns of the (R, T, D) tensors, its
 * T x T block of p, its rows of the transposed [D, Tp], its row's dropout
 * key (as the dropout op makes it) and its first unit there. */
struct head_at {
	size_t cols, block, slice;
	uint64_t key, unit0;
};

static struct head_at head_at(const struct attn_dims *d, int r, int h, int Tp)
{
	size_t T = (size_t)d->T, K = (size_t)d->K;
	struct head_at a = {(size_t)r * T * K * d->H + h * K, ((size_t)r * d->H + h) * T * T,
			    h * K * Tp, 0, (uint64_t)h * T * T};
	if (d->drop.rate > 0.0f)
		a.key = dropout_row_key(d->drop.seed, d->drop.step, d->drop.row0 + (uint64_t)r);
	return a;
}

int cpu_attn_forward(const struct backend *be, float *o, float *p, float *pd, const float *q,
		     const float *k, const float *v, const struct attn_dims *d)
{
	if (cpu_bf16) /* bf16's products round their operands: the composed path */
		return 0;
	int T = d->T, K = d->K, D = d->H * K, Tp = whole_panels(T);
	size_t per = (size_t)(D + T) * Tp; /* a thread's: kt, then s */
	float *buf = scratch(per * (size_t)cpu_split_parts((size_t)d->rows, 1));
	CPU_SPLIT((size_t)d->rows, 1, part, r0, r1, {
		float *kt = buf + per * (size_t)part, *s = kt + (size_t)D * Tp;
		for (int r = (int)r0; r < (int)r1; r++) {
			transpose(kt, k + (size_t)r * T * D, T, D, Tp);
			for (int h = 0; h < d->H; h++) {
				struct head_at a = head_at(d, r, h, Tp);
				head_forward(o + a.cols, p + a.block, pd + a.block, q + a.cols,
					     kt + a.slice, v + a.cols, s, d, D, Tp, a.key, a.unit0);
			}
		}
	});
	return 1;
}

/* One head's backward: dq_h, dk_h, dv_h (T, K; ld D) from do_h, q_h, k_h
 * (ld D), the transposed values vt (K, Tp), p and pd (T, T); ds (T, Tp)
 * scratch for the probabilities' gradient, then the scores'; key and
 * unit0 as head_forward's. */
CPU_WIDE static void head_backward(float *dq, float *dk, float *dv, const float *dout,
				   const float *q, const float *k, const float *vt, const float *p,
				   const float *pd, float *ds, const struct attn_dims *d, int D,
				   int Tp, uint64_t key, uint64_t unit0)
{
	int T = d->T, K = d->K;
	for (int i0 = 0; i0 < T;) { /* by queries: ds, then dq_h = ds k_h */
		struct strip st = strip_at(d, i0, Tp);
		int m = st.i1 - st.i0, cols = st.keys < T ? st.keys : T;
		cpu_small_matmul(ds + (size_t)i0 * Tp, dout + (size_t)i0 * D, vt, m, st.keys, K, 0,
				 0, D, Tp, Tp);
		if (d->drop.rate > 0.0f) /* the gradient of pd, to p's */
			drop_rows(ds, (size_t)Tp, ds, (size_t)Tp, st.i0, st.i1, d, key, unit0, 0);
		for (int i = st.i0; i < st.i1; i++) /* p is 0 past query i: so is ds */
			softmax_backward_row(ds + (size_t)i * Tp, ds + (size_t)i * Tp,
					     p + (size_t)i * T, cols, d->scale);
		product(dq + (size_t)i0 * D, ds + (size_t)i0 * Tp, k, m, K, d->causal ? st.i1 : T, 0,
			Tp, D, D);
		i0 = st.i1;
	}
	for (int j0 = 0; j0 < T;) { /* by keys: dv_h = p^T do_h, dk_h = ds^T q_h */
		struct strip st = strip_at(d, j0, Tp);
		int from = d->causal ? j0 : 0; /* the queries that see key j0 and after */
		int m = st.i1 - st.i0, n = T - from;
		product(dv + (size_t)j0 * D, pd + (size_t)from * T + j0, dout + (size_t)from * D, m,
			K, n, 1, T, D, D);
		product(dk + (size_t)j0 * D, ds + (size_t)from * Tp + j0, q + (size_t)from * D, m,
			K, n, 1, Tp, D, D);
		j0 = st.i1;
	}
}

int cpu_attn_backward(const struct backend *be, float *dq, float *dk, float *dv,
		      const float *dout, const float *q, const float *k, const float *v,
		      const float *p, const float *pd, const struct attn_dims *d)
{
	if (cpu_bf16)
		return 0;
	int T = d->T, K = d->K, D = d->H * K, Tp = whole_panels(T);
	size_t per = (size_t)(D + T) * Tp; /* a thread's: vt, then ds */
	float *buf = scratch(per * (size_t)cpu_split_parts((size_t)d->rows, 1));
	CPU_SPLIT((size_t)d->rows, 1, part, r0, r1, {
		float *vt = buf + per * (size_t)part, *ds = vt + (size_t)D * Tp;
		for (int r = (int)r0; r < (int)r1; r++) {
			transpose(vt, v + (size_t)r * T * D, T, D, Tp);
			for (int h = 0; h < d->H; h++) {
				struct head_at a = head_at(d, r, h, Tp);
				head_backward(dq + a.cols, dk + a.cols, dv + a.cols, dout + a.cols,
					      q + a.cols, k + a.cols, vt + a.slice, p + a.block,
					      pd + a.block, ds, d, D, Tp, a.key, a.unit0);
			}
		}
	});
	return 1;
}
