/* The matrix products a model's layers issue for a batch, as bare
 * cblas_sgemm calls on buffers of their own (bench_gemm.h), for
 * bench_layers to time beside the layers: dense's (per token on a
 * sequence), conv2d's on its im2col windows, and attention's, its heads'
 * products as the backend's matmul_batched makes them. Header-only, as
 * bench_gemm.h: each benchmark is one program. */
#pragma once
#include "bench_gemm.h"
#include "layer_spec.h"
#include "layers.h"
#include "model.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_GEMMS (3 * MODEL_MAX_LAYERS) /* products a model may have */
#define MAX_BUFS (4 * MAX_GEMMS)

/* The bare products of one rows value and the buffers they use (a buffer
 * may serve several: attention's heads share their layer's). */
struct products {
	struct gemm g[MAX_GEMMS];
	int n;
	float *buf[MAX_BUFS];
	int n_bufs;
	int full; /* more products or buffers than fit: none are run */
};

/* n floats uniform in [lo, lo + 1), freed by products_free; NULL once full. */
static float *products_buf(struct products *p, size_t n, float lo)
{
	if (p->full || p->n_bufs == MAX_BUFS) {
		p->full = 1;
		return NULL;
	}
	return p->buf[p->n_bufs++] = bench_rand(n, lo);
}

/* One product of layer (or a batch of them: batch > 0) on the given buffers. */
static void products_add(struct products *p, int layer, const char *what, int m, int n, int k,
			 int ta, int tb, const float *a, const float *b, float *c, int batch,
			 int lda, int ldb, int ldc, size_t sa, size_t sb, size_t sc)
{
	if (p->full || p->n == MAX_GEMMS) {
		p->full = 1;
		return;
	}
	struct gemm *g = &p->g[p->n++];
	*g = (struct gemm){.m = m, .n = n, .k = k, .ta = ta, .tb = tb, .a = a, .b = b, .c = c,
			   .tag = layer, .batch = batch, .lda = lda, .ldb = ldb, .ldc = ldc,
			   .sa = sa, .sb = sb, .sc = sc};
	snprintf(g->what, sizeof(g->what), "layer %d %s", layer + 1, what);
}

/* One packed product on buffers of its own. */
static void products_add_own(struct products *p, int layer, const char *what, int m, int n,
			     int k, int ta, int tb)
{
	float *a = products_buf(p, (size_t)m * k, -0.5f), *b = products_buf(p, (size_t)k * n, -0.5f);
	float *c = products_buf(p, (size_t)m * n, 0.0f);
	products_add(p, layer, what, m, n, k, ta, tb, a, b, c, 0, 0, 0, 0, 0, 0, 0);
}

/* Attention's products for R rows as src/layer_attn.c issues them, on
 * buffers laid out as the layer's (a head's K columns of each token's D,
 * its T x T block of the probabilities): forward the q, k and v
 * projections (R*T, D) @ (D, D), per head the scores q_h k_h^T and the
 * context p_h v_h (R products of T x T x K each), the output projection;
 * backward the output kernel's gradient and do, per head dp_h = do_h v_h^T,
 * dv_h = p_h^T do_h, dq_h = ds_h k_h, dk_h = ds_h^T q_h, then the three
 * kernels' gradients and dx's three products (each into its own buffer:
 * the layer adds them, beta 1). Every output has a buffer of its own, and
 * a product reads what an earlier one wrote (q, p, dp), as the layer does. */
static void attn_products(struct products *p, const struct layer *l, int layer, int R)
{
	int T = l->in[1], D = l->in[2], H = l->spec.units, K = D / H, N = R * T;
	size_t td = (size_t)T * D, tt = (size_t)T * T, htt = H * tt, nd = (size_t)N * D;
	static const char *const proj[] = {"query", "key", "value", "output"};
	float *x = products_buf(p, nd, -0.5f), *dy = products_buf(p, nd, -0.5f);
	float *w[4], *qkv[3], *dqkv[3];
	for (int s = 0; s < 4; s++)
		w[s] = products_buf(p, (size_t)D * D, -0.5f);
	for (int s = 0; s < 3; s++) {
		qkv[s] = products_buf(p, nd, 0.0f);
		dqkv[s] = products_buf(p, nd, 0.0f);
	}
	float *o = products_buf(p, nd, 0.0f), *probs = products_buf(p, R * htt, 0.0f);
	float *dout = products_buf(p, nd, 0.0f), *dp = products_buf(p, R * htt, 0.0f);
	if (p->full)
		return;
	char what[24]; /* "output kernel grad" */
	for (int s = 0; s < 3; s++) {
		snprintf(what, sizeof(what), "%s projection", proj[s]);
		products_add(p, layer, what, N, D, D, 0, 0, x, w[s], qkv[s], 0, 0, 0, 0, 0, 0, 0);
	}
	for (int h = 0; h < H; h++)
		products_add(p, layer, "head scores", T, T, K, 0, 1, qkv[0] + h * K, qkv[1] + h * K,
			     probs + h * tt, R, D, D, T, td, td, htt);
	for (int h = 0; h < H; h++)
		products_add(p, layer, "head context", T, K, T, 0, 0, probs + h * tt, qkv[2] + h * K,
			     o + h * K, R, T, D, D, htt, td, td);
	products_add(p, layer, "output projection", N, D, D, 0, 0, o, w[3],
		     products_buf(p, nd, 0.0f), 0, 0, 0, 0, 0, 0, 0);
	products_add(p, layer, "output kernel grad", D, D, N, 1, 0, o, dy,
		     products_buf(p, (size_t)D * D, 0.0f), 0, 0, 0, 0, 0, 0, 0);
	products_add(p, layer, "output input grad", N, D, D, 0, 1, dy, w[3], dout, 0, 0, 0, 0, 0,
		     0, 0);
	for (int h = 0; h < H; h++) {
		products_add(p, layer, "head dp", T, T, K, 0, 1, dout + h * K, qkv[2] + h * K,
			     dp + h * tt, R, D, D, T, td, td, htt);
		products_add(p, layer, "head dv", T, K, T, 1, 0, probs + h * tt, dout + h * K,
			     dqkv[2] + h * K, R, T, D, D, htt, td, td);
	}
	for (int h = 0; h < H; h++) {
		products_add(p, layer, "head dq", T, K, T, 0, 0, dp + h * tt, qkv[1] + h * K,
			     dqkv[0] + h * K, R, T, D, D, htt, td, td);
		products_add(p, layer, "head dk", T, K, T, 1, 0, dp + h * tt, qkv[0] + h * K,
			     dqkv[1] + h * K, R, T, D, D, htt, td, td);
	}
	for (int s = 0; s < 3; s++) {
		snprintf(what, sizeof(what), "%s kernel grad", proj[s]);
		products_add(p, layer, what, D, D, N, 1, 0, x, dqkv[s],
			     products_buf(p, (size_t)D * D, 0.0f), 0, 0, 0, 0, 0, 0, 0);
	}
	for (int s = 0; l->needs_dx[0] && s < 3; s++) {
		snprintf(what, sizeof(what), "%s input grad", proj[s]);
		products_add(p, layer, what, N, D, D, 0, 1, dqkv[s], w[s],
			     products_buf(p, nd, 0.0f), 0, 0, 0, 0, 0, 0, 0);
	}
}

/* The products layers.c's dense and conv2d issue for rows rows, with the
 * same shapes and transposes: forward y = x @ kernel, the kernel's gradient
 * x^T @ dy, and dx = dy @ kernel^T where a layer below needs it. dense on a
 * sequence works per token: M = R*T, K and N a token's widths in and out.
 * conv2d is the same on its im2col windows: M = R*oh*ow, N = filters, K =
 * kh*kw*C. Then attention's (attn_products). 0, or -1 when they do not fit. */
static int products_init(struct products *p, const struct model *m, int rows)
{
	p->n = p->n_bufs = p->full = 0;
	for (int i = 0; i < m->n_layers; i++) {
		const struct layer *l = &m->layer[i];
		int mm, nn, k;
		if (l->spec.kind == LAYER_DENSE && l->in_seq) {
			mm = rows * l->in[1];
			nn = l->out[2];
			k = l->in[2];
		} else if (l->spec.kind == LAYER_DENSE) {
			mm = rows;
			nn = (int)l->out_size;
			k = (int)l->in_size;
		} else if (l->spec.kind == LAYER_CONV2D) {
			int pos = l->win.oh * l->win.ow;
			mm = rows * pos;
			nn = l->spec.units;
			k = (int)(l->cols_size / (size_t)pos);
		} else {
			if (l->spec.kind == LAYER_ATTENTION)
				attn_products(p, l, i, rows);
			continue;
		}
		products_add_own(p, i, "forward", mm, nn, k, 0, 0);
		products_add_own(p, i, "weight grad", k, nn, mm, 1, 0);
		if (l->needs_dx[0])
			products_add_own(p, i, "input grad", mm, k, nn, 0, 1);
	}
	if (p->full)
		fprintf(stderr, "bench_layers: the model's products do not fit in %d products of %d "
			"buffers\n", MAX_GEMMS, MAX_BUFS);
	return p->full ? -1 : 0;
}

static void products_free(struct products *p)
{
	for (int i = 0; i < p->n_bufs; i++)
		free(p->buf[i]);
	p->n = p->n_bufs = 0;
}
