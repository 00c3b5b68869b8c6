/* The attention layer of the layer table (layer_ops.h): Keras'
 * MultiHeadAttention(num_heads=H, key_dim=D/H) as self-attention over a
 * sequence's T tokens of width D, with biases, the query scaled by
 * 1/sqrt(key_dim), an optional causal mask and dropout on the
 * probabilities. Per row (letters: T tokens, D width, H heads, K = D/H):
 *
 *   q, k, v = x Wq + bq, x Wk + bk, x Wv + bv          (T, D) each, head h
 *                                                      its K columns
 *   p_h = softmax(q_h k_h^T / sqrt(K), masked)         (T, T) per head
 *   o_h = dropout(p_h) v_h                             (T, K) into o (T, D)
 *   y = o Wo + bo                                      (T, D)
 *
 * The forward keeps q, k, v, o and p (and the dropped-out p) in the arena
 * for the backward; the backward's gradients of o, q, k, v and p are its
 * scratch. The heads (scores, softmax, context and back) run as the
 * backend's fused attn_forward and attn_backward where it has them
 * (the CPU's, backend_cpu_attn.c), else composed of its products,
 * softmax and dropout. */
#include "backend.h"
#include "layer_ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Keras' order of its variables: query, key, value, attention_output,
 * each kernel then bias. */
enum { ATT_QK, ATT_QB, ATT_KK, ATT_KB, ATT_VK, ATT_VB, ATT_OK, ATT_OB, ATT_VARS };

/* Where one call's tensors lie: rows R of T tokens. */
struct attn {
	int T, D, H, K, R;
	size_t td, htt; /* T * D, H * T * T: a row's share of each */
	float *q, *k, *v, *o, *p, *pd; /* kept: (R, T, D) each, p and pd (R, H, T, T);
					* pd is p where there is no dropout */
	float *dq, *dk, *dv, *dout, *dp; /* scratch of the backward: the same shapes */
};

static int dropout_on(const struct layer *l) { return l->spec.rate > 0.0f; }

static struct attn attn_of(const struct layer *l, const struct layer_ctx *c)
{
	struct attn a = {.T = l->in[1], .D = l->in[2], .H = l->spec.units, .R = c->rows};
	a.K = a.D / a.H;
	a.td = (size_t)a.T * a.D;
	a.htt = (size_t)a.H * a.T * a.T;
	size_t n = (size_t)a.R * a.td, np = (size_t)a.R * a.htt;
	a.q = c->keep;
	a.k = a.q + n;
	a.v = a.k + n;
	a.o = a.v + n;
	a.p = a.o + n;
	a.pd = dropout_on(l) ? a.p + np : a.p;
	if (c->work) {
		a.dq = c->work;
		a.dk = a.dq + n;
		a.dv = a.dk + n;
		a.dout = a.dv + n;
		a.dp = a.dout + n;
	}
	return a;
}

/* The fused ops' view of the call (backend.h): dropout on the
 * probabilities while training, keyed as heads_forward keys it. */
static struct attn_dims dims_of(const struct layer *l, const struct layer_ctx *c,
				const struct attn *a, int train_drop)
{
	struct attn_dims d = {a->R, a->T, a->H, a->K, 1.0f / sqrtf((float)a->K), l->spec.causal,
			      {0}};
	if (train_drop)
		d.drop = (struct dropout_key){c->seed, (uint64_t)c->step, (uint64_t)c->row0,
					      l->spec.rate};
	return d;
}

int layer_attn_shape(struct layer *l, int classes, char *why, size_t len)
{
	if (layer_needs_seq(l, why, len))
		return -1;
	int T = l->in[1], D = l->in[2], H = l->spec.units;
	if (D % H) {
		snprintf(why, len, "its width %d is not a multiple of its %d heads (key_dim = "
			 "width / heads)", D, H);
		return -1;
	}
	memcpy(l->out, l->in, sizeof(l->out));
	size_t td = (size_t)T * D, htt = (size_t)H * T * T;
	l->keep_size = 4 * td + (dropout_on(l) ? 2 : 1) * htt;
	l->work_size = 4 * td + htt;
	return 0;
}

/* A kernel's shape as Keras stores it: query, key and value [D, H, K],
 * attention_output [H, K, D]. */
static int kernel_dims(const struct layer *l, int which, long dims[3])
{
	int D = l->in[2], H = l->spec.units, K = D / H;
	long qkv[3] = {D, H, K}, out[3] = {H, K, D};
	memcpy(dims, which == ATT_OK ? out : qkv, sizeof(qkv));
	return 3;
}

void layer_attn_vars(struct layer *l, struct params *reg, const char *name, int trainable)
{
	static const char *const part[] = {"query", "key", "value", "attention_output"};
	if (!trainable)
		return;
	for (int v = 0; v < ATT_VARS; v += 2) {
		long dims[3];
		int nd = kernel_dims(l, v, dims);
		char full[PARAM_NAME_LEN];
		snprintf(full, sizeof(full), "%s/%s/kernel", name, part[v / 2]);
		l->var[v] = params_add(reg, full, nd, dims);
		snprintf(full, sizeof(full), "%s/%s/bias", name, part[v / 2]);
		/* [H, K] for the projections in, [D] for the one out */
		l->var[v + 1] = v == ATT_OK ? params_add(reg, full, 1, &dims[2])
					    : params_add(reg, full, 2, &dims[1]);
	}
	l->n_vars = ATT_VARS;
}

/* Glorot-uniform kernels, zero biases. Keras' EinsumDense takes its fans
 * from the einsum's axes, not a convolution's: each kernel maps D values
 * to D (the heads' H * K), so all four are a [D, D] matrix's, uniform in
 * +-sqrt(6 / (D + D)). */
void layer_attn_init(const struct layer *l, struct rng *r, float *host_w)
{
	const long as_matrix[2] = {l->in[2], l->in[2]};
	for (int v = 0; v < ATT_VARS; v += 2)
		layer_glorot(l, v, r, host_w, 2, as_matrix);
}

/* Every head's product of every row: at once where the backend can
 * (matmul_heads), else a head at a time. */
static void heads(const struct backend *be, float *c, const float *a, const float *b, int m,
		  int n, int k, int ta, int tb, int lda, int ldb, int ldc, const struct batch2 *bt)
{
	if (be->matmul_heads) {
		be->matmul_heads(be, c, a, b, m, n, k, ta, tb, 0.0f, lda, ldb, ldc, bt);
		return;
	}
	for (int h = 0; h < bt->heads; h++)
		be->matmul_batched(be, c + h * bt->hc, a + h * bt->ha, b + h * bt->hb, m, n, k, ta,
				   tb, 0.0f, bt->rows, lda, ldb, ldc, bt->sa, bt->sb, bt->sc);
}

/* y (R*T, D) = x (R*T, D) @ w (D, D) + b. */
static void project(const struct backend *be, float *y, const float *x, const float *w,
		    const float *b, int n, int d)
{
	be->matmul(be, y, x, w, n, d, d, 0, 0, 0.0f);
	be->bias_act(be, NULL, y, b, n, d, ACT_RELU);
}

/* The heads composed of the backend's products, softmax and dropout,
 * where it fuses none. */
static void heads_forward(const struct layer *l, const struct layer_ctx *c, const struct attn *pa,
			  const struct attn_dims *d)
{
	const struct backend *be = c->be;
	struct attn a = *pa;
	int train_drop = d->drop.rate > 0.0f;
	size_t tt = (size_t)a.T * a.T, K = (size_t)a.K;
	/* scores: q_h k_h^T, per row */
	heads(be, a.p, a.q, a.k, a.T, a.T, a.K, 0, 1, a.D, a.D, a.T,
	      &(struct batch2){a.R, a.H, a.td, a.td, a.htt, K, K, tt});
	be->softmax(be, a.p, a.p, a.R * a.H * a.T, a.T, d->scale, d->causal);
	const float *probs = a.p;
	if (train_drop) {
		be->dropout(be, a.pd, a.p, a.R, (int)a.htt, &d->drop);
		probs = a.pd;
	}
	/* context: p_h v_h into o's head columns */
	heads(be, a.o, probs, a.v, a.T, a.K, a.T, 0, 0, a.T, a.D, a.D,
	      &(struct batch2){a.R, a.H, a.htt, a.td, a.td, tt, K, K});
}

void layer_attn_forward(struct layer *l, const struct layer_ctx *c)
{
	const struct backend *be = c->be;
	struct attn a = attn_of(l, c);
	int n = a.R * a.T;
	project(be, a.q, c->x, c->w[ATT_QK], c->w[ATT_QB], n, a.D);
	project(be, a.k, c->x, c->w[ATT_KK], c->w[ATT_KB], n, a.D);
	project(be, a.v, c->x, c->w[ATT_VK], c->w[ATT_VB], n, a.D);
	int train_drop = dropout_on(l) && c->training;
	struct attn_dims d = dims_of(l, c, &a, train_drop);
	if (!be->attn_forward ||
	    !be->attn_forward(be, a.o, a.p, train_drop ? a.pd : a.p, a.q, a.k, a.v, &d))
		heads_forward(l, c, &a, &d);
	project(be, l->y, a.o, c->w[ATT_OK], c->w[ATT_OB], n, a.D);
}

void layer_attn_forward_at(struct layer *l, const struct layer_ctx *c, int t)
{
	const struct backend *be = c->be;
	struct attn a = attn_of(l, c); /* one row: c->rows is 1 */
	size_t at = (size_t)t * a.D, tt = (size_t)a.T * a.T;
	float scale = 1.0f / sqrtf((float)a.K);
	project(be, a.q + at, c->x + at, c->w[ATT_QK], c->w[ATT_QB], 1, a.D);
	project(be, a.k + at, c->x + at, c->w[ATT_KK], c->w[ATT_KB], 1, a.D);
	project(be, a.v + at, c->x + at, c->w[ATT_VK], c->w[ATT_VB], 1, a.D);
	float *scores = a.p + (size_t)t * a.T; /* row t of each head's T x T */
	/* head h: q_h(t) against the keys of tokens 0..t, all it may see */
	be->matmul_batched(be, scores, a.q + at, a.k, 1, t + 1, a.K, 0, 1, 0.0f, a.H, a.D, a.D,
			   a.T, (size_t)a.K, (size_t)a.K, tt);
	for (int h = 0; h < a.H; h++)
		be->softmax(be, scores + h * tt, scores + h * tt, 1, t + 1, scale, 0);
	be->matmul_batched(be, a.o + at, scores, a.v, 1, a.K, t + 1, 0, 0, 0.0f, a.H, a.T, a.D,
			   a.D, tt, (size_t)a.K, (size_t)a.K);
	project(be, l->y + at, a.o + at, c->w[ATT_OK], c->w[ATT_OB], 1, a.D);
}

/* heads_forward's backward: dq, dk, dv from dout. */
static void heads_backward(const struct layer *l, const struct layer_ctx *c, const struct attn *pa,
			   const struct attn_dims *d)
{
	const struct backend *be = c->be;
	struct attn a = *pa;
	int D = a.D;
	const float *probs = dropout_on(l) ? a.pd : a.p;
	size_t tt = (size_t)a.T * a.T, K = (size_t)a.K;
	/* d probs_h = do_h v_h^T; dv_h = probs_h^T do_h */
	heads(be, a.dp, a.dout, a.v, a.T, a.T, a.K, 0, 1, D, D, a.T,
	      &(struct batch2){a.R, a.H, a.td, a.td, a.htt, K, K, tt});
	heads(be, a.dv, probs, a.dout, a.T, a.K, a.T, 1, 0, a.T, D, D,
	      &(struct batch2){a.R, a.H, a.htt, a.td, a.td, tt, K, K});
	if (dropout_on(l)) /* the same mask, from the same key */
		be->dropout(be, a.dp, a.dp, a.R, (int)a.htt, &d->drop);
	be->softmax_backward(be, a.dp, a.dp, a.p, a.R * a.H * a.T, a.T, d->scale);
	/* dq_h = ds_h k_h; dk_h = ds_h^T q_h */
	heads(be, a.dq, a.dp, a.k, a.T, a.K, a.T, 0, 0, a.T, D, D,
	      &(struct batch2){a.R, a.H, a.htt, a.td, a.td, tt, K, K});
	heads(be, a.dk, a.dp, a.q, a.T, a.K, a.T, 1, 0, a.T, D, D,
	      &(struct batch2){a.R, a.H, a.htt, a.td, a.td, tt, K, K});
}

void layer_attn_backward(struct layer *l, const struct layer_ctx *c, const float *dy, float *dx)
{
	const struct backend *be = c->be;
	struct attn a = attn_of(l, c);
	int n = a.R * a.T, D = a.D;
	be->matmul(be, c->g[ATT_OK], a.o, dy, D, D, n, 1, 0, 0.0f);
	be->bias_grad(be, c->g[ATT_OB], dy, n, D);
	be->matmul(be, a.dout, dy, c->w[ATT_OK], n, D, D, 0, 1, 0.0f);
	struct attn_dims d = dims_of(l, c, &a, dropout_on(l));
	if (!be->attn_backward || !be->attn_backward(be, a.dq, a.dk, a.dv, a.dout, a.q, a.k, a.v,
						     a.p, a.pd, &d))
		heads_backward(l, c, &a, &d);
	const float *dproj[3] = {a.dq, a.dk, a.dv};
	for (int s = 0; s < 3; s++)
		be->matmul(be, c->g[2 * s], c->x, dproj[s], D, D, n, 1, 0, 0.0f);
	be->bias_grad(be, c->g[ATT_QB], a.dq, n, D);
	be->bias_grad(be, c->g[ATT_VB], a.dv, n, D);
	/* The key's bias adds q_i . b to each of query i's scores alike, which
	 * the softmax does not see: its gradient is exactly 0. Its sum over
	 * tokens would be rounding noise, which Adam scales to steps of the
	 * learning rate's size (and which differs with the number of ranks). */
	be->scale(be, c->g[ATT_KB], (size_t)D, 0.0f);
	layer_grads_ready(c, ATT_OB, (size_t)D);
	for (int s = 0; dx && s < 3; s++)
		be->matmul(be, dx, dproj[s], c->w[2 * s], n, D, D, 0, 1, s ? 1.0f : 0.0f);
}

/* Forward FLOPs a row: the four projections and the two products over
 * tokens. */
double layer_attn_flops(const struct layer *l)
{
	double T = l->in[1], D = l->in[2];
	return 8.0 * T * D * D + 4.0 * T * T * D;
}
