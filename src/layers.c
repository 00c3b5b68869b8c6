/* The layer table of layers.h: one struct layer_ops per kind. */
#include "layers.h"
#include "model.h"
#include "rng.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct layer_ops {
	const char *keras; /* the name its variables take, NULL: none */
	int (*shape)(struct layer *l, int classes, char *why, size_t len);
	void (*vars)(struct layer *l, struct params *reg, const char *name, int trainable);
	void (*init)(const struct layer *l, struct rng *r, float *host_w);
	void (*forward)(struct model *m, struct layer *l, const float *x, int rows, int train);
	void (*backward)(struct model *m, struct layer *l, const float *x, const float *dy,
			 float *dx, int rows);
	double (*flops)(const struct layer *l);
	void (*update_state)(struct model *m, struct layer *l);
	int in_place; /* backward may write dx over dy; output may alias input */
};

static void set_flat(int *shape, size_t d)
{
	shape[0] = shape[1] = 1;
	shape[2] = (int)d;
}

/* z (rows, cols) += bias, and the activation right after l, if it is fused
 * into l, into that layer's output in the same pass. */
static void bias_and_fused_act(struct model *m, struct layer *l, int rows, int cols)
{
	const struct layer *next = l + 1 < m->layer + m->n_layers ? l + 1 : NULL;
	int act = next && next->fused ? layer_spec_act(&next->spec) : -1;
	m->be->bias_act(m->be, act >= 0 ? next->y : NULL, l->y, m->w + l->var[1], rows, cols,
			act >= 0 ? (enum act_kind)act : ACT_RELU);
}

/* dense: y (R,O) = x (R,I) @ kernel (I,O) + bias (O), on the flattened row. */
static int dense_shape(struct layer *l, int classes, char *why, size_t len)
{
	set_flat(l->out, l->spec.units ? (size_t)l->spec.units : (size_t)classes);
	return 0;
}

/* dense's and conv2d's variables: name/kernel of shape kdims[0..kndim)
 * and name/bias of its last dimension. */
static void kernel_and_bias(struct layer *l, struct params *reg, const char *name, int kndim,
			    const long *kdims)
{
	char full[PARAM_NAME_LEN];
	snprintf(full, sizeof(full), "%s/kernel", name);
	l->var[0] = params_add(reg, full, kndim, kdims);
	snprintf(full, sizeof(full), "%s/bias", name);
	l->var[1] = params_add(reg, full, 1, &kdims[kndim - 1]);
	l->n_vars = 2;
}

/* A Glorot-uniform kernel of n values at host_w + l->var[0] (Keras'
 * default; the bias stays 0). */
static void glorot_kernel(const struct layer *l, struct rng *r, float *host_w, size_t n,
			  size_t fan_in, size_t fan_out)
{
	float limit = sqrtf(6.0f / (float)(fan_in + fan_out));
	float *k = host_w + l->var[0];
	for (size_t i = 0; i < n; i++)
		k[i] = (2.0f * rng_uniform(r) - 1.0f) * limit;
}

static void dense_vars(struct layer *l, struct params *reg, const char *name, int trainable)
{
	long kdims[2] = {(long)l->in_size, (long)l->out_size};
	if (trainable)
		kernel_and_bias(l, reg, name, 2, kdims);
}

static void dense_init(const struct layer *l, struct rng *r, float *host_w)
{
	glorot_kernel(l, r, host_w, l->in_size * l->out_size, l->in_size, l->out_size);
}

static void dense_forward(struct model *m, struct layer *l, const float *x, int rows, int train)
{
	const struct backend *be = m->be;
	int in = (int)l->in_size, out = (int)l->out_size;
	be->matmul(be, l->y, x, m->w + l->var[0], rows, out, in, 0, 0, 0.0f);
	bias_and_fused_act(m, l, rows, out);
}

static void dense_backward(struct model *m, struct layer *l, const float *x, const float *dy,
			   float *dx, int rows)
{
	const struct backend *be = m->be;
	int in = (int)l->in_size, out = (int)l->out_size;
	be->matmul(be, m->g + l->var[0], x, dy, in, out, rows, 1, 0, 0.0f);
	be->bias_grad(be, m->g + l->var[1], dy, rows, out);
	model_grad_ready(m, l->var[0], l->var[1] + l->out_size - l->var[0]);
	if (dx)
		be->matmul(be, dx, dy, m->w + l->var[0], rows, in, out, 0, 1, 0.0f);
}

static double dense_flops(const struct layer *l)
{
	return 2.0 * (double)l->in_size * (double)l->out_size;
}

/* relu, gelu, tanh: y = act(x), element-wise, any shape. */
static int same_shape(struct layer *l, int classes, char *why, size_t len)
{
	memcpy(l->out, l->in, sizeof(l->out));
	return 0;
}

static void act_forward(struct model *m, struct layer *l, const float *x, int rows, int train)
{
	if (!l->fused)
		m->be->act_forward(m->be, l->y, x, (size_t)rows * l->out_size,
				   (enum act_kind)layer_spec_act(&l->spec));
}

static void act_backward(struct model *m, struct layer *l, const float *x, const float *dy,
			 float *dx, int rows)
{
	if (dx)
		m->be->act_backward(m->be, dx, dy, x, (size_t)rows * l->out_size,
				    (enum act_kind)layer_spec_act(&l->spec));
}

/* flatten: the same values as one row of H * W * C. */
static int flatten_shape(struct layer *l, int classes, char *why, size_t len)
{
	set_flat(l->out, l->in_size);
	return 0;
}

static void flatten_forward(struct model *m, struct layer *l, const float *x, int rows, int train)
{
}

static void flatten_backward(struct model *m, struct layer *l, const float *x, const float *dy,
			     float *dx, int rows)
{
	if (dx && dx != dy)
		m->be->copy(m->be, dx, dy, (size_t)rows * l->out_size * sizeof(float));
}

/* dropout: while training, each unit zeroed with probability rate and the
 * rest scaled by 1 / (1 - rate), the mask keyed by (seed, step, row of the
 * global batch, unit); the identity when evaluating. */
static struct dropout_key dropout_key(const struct model *m, const struct layer *l)
{
	return (struct dropout_key){m->seed ^ (uint64_t)(l - m->layer) << 56, (uint64_t)m->step,
				    (uint64_t)m->row0, l->spec.rate};
}

static void dropout_forward(struct model *m, struct layer *l, const float *x, int rows, int train)
{
	const struct backend *be = m->be;
	struct dropout_key k = dropout_key(m, l);
	if (train)
		be->dropout(be, l->y, x, rows, (int)l->out_size, &k);
	else
		be->copy(be, l->y, x, (size_t)rows * l->out_size * sizeof(float));
}

static void dropout_backward(struct model *m, struct layer *l, const float *x, const float *dy,
			     float *dx, int rows)
{
	struct dropout_key k = dropout_key(m, l);
	if (dx)
		m->be->dropout(m->be, dx, dy, rows, (int)l->out_size, &k);
}

static double no_flops(const struct layer *l) { return 0.0; }

/* The window of a kernel or pool of kh x kw and strides s over l->in, with
 * TF's padding: 'same' gives ceil(in / s) positions, padded evenly with the
 * odd one after; 'valid' only whole windows. 0, or -1 when the input is
 * smaller than a valid window. */
static int set_window(struct layer *l, int kh, int kw, int sh, int sw, int same, char *why,
		      size_t len)
{
	struct window *w = &l->win;
	*w = (struct window){.h = l->in[0], .w = l->in[1], .c = l->in[2], .kh = kh, .kw = kw,
			     .sh = sh, .sw = sw};
	if (same) {
		w->oh = (w->h + sh - 1) / sh;
		w->ow = (w->w + sw - 1) / sw;
		int ph = (w->oh - 1) * sh + kh - w->h, pw = (w->ow - 1) * sw + kw - w->w;
		w->pt = ph > 0 ? ph / 2 : 0;
		w->pl = pw > 0 ? pw / 2 : 0;
	} else {
		if (w->h < kh || w->w < kw) {
			snprintf(why, len, "its %dx%d window does not fit its %dx%d input", kh, kw,
				 w->h, w->w);
			return -1;
		}
		w->oh = (w->h - kh) / sh + 1;
		w->ow = (w->w - kw) / sw + 1;
	}
	return 0;
}

/* conv2d: NHWC, kernel [kh, kw, in, out] (Keras' shape and order; one
 * matrix of kh*kw*in rows and out columns), as im2col then one product. */
static int conv_shape(struct layer *l, int classes, char *why, size_t len)
{
	const struct layer_spec *s = &l->spec;
	if (set_window(l, s->size, s->size, s->stride, s->stride, s->same, why, len))
		return -1;
	l->out[0] = l->win.oh;
	l->out[1] = l->win.ow;
	l->out[2] = s->units;
	l->cols_size = (size_t)l->win.oh * l->win.ow * s->size * s->size * l->in[2];
	return 0;
}

static void conv_vars(struct layer *l, struct params *reg, const char *name, int trainable)
{
	/* [kh, kw, in, out], Keras' shape: row-major, the matrix of kh*kw*in
	 * rows (im2col's column order) and out columns that conv2d multiplies by */
	long kdims[4] = {l->spec.size, l->spec.size, l->in[2], l->spec.units};
	if (trainable)
		kernel_and_bias(l, reg, name, 4, kdims);
}

/* Glorot-uniform over fan_in = kh*kw*in and fan_out = kh*kw*out (Keras). */
static void conv_init(const struct layer *l, struct rng *r, float *host_w)
{
	size_t area = (size_t)l->spec.size * l->spec.size;
	glorot_kernel(l, r, host_w, area * l->in[2] * l->spec.units, area * l->in[2],
		      area * l->spec.units);
}

static void conv_forward(struct model *m, struct layer *l, const float *x, int rows, int train)
{
	const struct backend *be = m->be;
	int positions = rows * l->win.oh * l->win.ow, k = (int)(l->cols_size / (l->win.oh * l->win.ow));
	int f = l->spec.units;
	be->im2col(be, m->cols, x, rows, &l->win);
	be->matmul(be, l->y, m->cols, m->w + l->var[0], positions, f, k, 0, 0, 0.0f);
	bias_and_fused_act(m, l, positions, f);
}

static void conv_backward(struct model *m, struct layer *l, const float *x, const float *dy,
			  float *dx, int rows)
{
	const struct backend *be = m->be;
	int positions = rows * l->win.oh * l->win.ow, k = (int)(l->cols_size / (l->win.oh * l->win.ow));
	int f = l->spec.units;
	be->im2col(be, m->cols, x, rows, &l->win); /* recomputed: one buffer serves all */
	be->matmul(be, m->g + l->var[0], m->cols, dy, k, f, positions, 1, 0, 0.0f);
	be->bias_grad(be, m->g + l->var[1], dy, positions, f);
	model_grad_ready(m, l->var[0], l->var[1] + (size_t)f - l->var[0]);
	if (!dx)
		return;
	be->matmul(be, m->cols, dy, m->w + l->var[0], positions, k, f, 0, 1, 0.0f);
	be->col2im(be, dx, m->cols, rows, &l->win);
}

static double conv_flops(const struct layer *l)
{
	return 2.0 * (double)l->cols_size * l->spec.units;
}

/* maxpool2d, avgpool2d: 'valid' windows of size with stride; globalavgpool:
 * the mean over the whole h x w, one value per channel. */
static int pool_shape(struct layer *l, int classes, char *why, size_t len)
{
	const struct layer_spec *s = &l->spec;
	int global = s->kind == LAYER_GLOBALAVGPOOL;
	if (global ? set_window(l, l->in[0], l->in[1], 1, 1, 0, why, len)
		   : set_window(l, s->size, s->size, s->stride, s->stride, 0, why, len))
		return -1;
	l->out[0] = l->win.oh;
	l->out[1] = l->win.ow;
	l->out[2] = l->in[2];
	return 0;
}

static void pool_forward(struct model *m, struct layer *l, const float *x, int rows, int train)
{
	m->be->pool(m->be, l->y, x, rows, &l->win, l->spec.kind == LAYER_MAXPOOL2D);
}

static void pool_backward(struct model *m, struct layer *l, const float *x, const float *dy,
			  float *dx, int rows)
{
	if (dx)
		m->be->pool_backward(m->be, dx, dy, x, rows, &l->win,
				     l->spec.kind == LAYER_MAXPOOL2D);
}

static double pool_flops(const struct layer *l)
{
	return (double)l->out_size * l->win.kh * l->win.kw;
}

/* batchnorm: over the last axis (channels), Keras' defaults. While
 * training, each channel is normalised with the mean and (biased) variance
 * of its values in the batch: this rank's rows, or with m->sum (--sync-bn)
 * every rank's; evaluating, with the moving statistics. After each step
 * taken the moving statistics follow the batch's: moving = momentum *
 * moving + (1 - momentum) * batch, the variance's Bessel-corrected (as
 * PyTorch and Keras' fused kernel do). */
#define BN_MOMENTUM 0.99f
#define BN_EPSILON 1e-3f

enum { BN_GAMMA, BN_BETA, BN_MOVING_MEAN, BN_MOVING_VAR };

static int bn_shape(struct layer *l, int classes, char *why, size_t len)
{
	memcpy(l->out, l->in, sizeof(l->out));
	l->aux_size = 5 * (size_t)l->in[2];
	return 0;
}

static const char *const bn_suffix[] = {"gamma", "beta", "moving_mean", "moving_variance"};

static void bn_vars(struct layer *l, struct params *reg, const char *name, int trainable)
{
	const char *const *suffix = bn_suffix;
	long dims[1] = {l->in[2]};
	for (int i = trainable ? BN_GAMMA : BN_MOVING_MEAN; i < (trainable ? 2 : 4); i++) {
		char full[PARAM_NAME_LEN];
		snprintf(full, sizeof(full), "%s/%s", name, suffix[i]);
		l->var[i] = trainable ? params_add(reg, full, 1, dims)
				      : params_add_state(reg, full, 1, dims);
	}
	l->n_vars = trainable ? 2 : 4;
}

static void bn_init(const struct layer *l, struct rng *r, float *host_w)
{
	for (int j = 0; j < l->in[2]; j++)
		host_w[l->var[BN_GAMMA] + j] = host_w[l->var[BN_MOVING_VAR] + j] = 1.0f;
}

/* The values each channel's statistics are over: this rank's positions, or
 * the global batch's under --sync-bn. */
static double bn_count(const struct model *m, const struct layer *l, int rows)
{
	double per_row = (double)l->in[0] * l->in[1];
	return per_row * (m->sum ? (double)m->global_rows : (double)rows);
}

static void bn_forward(struct model *m, struct layer *l, const float *x, int rows, int train)
{
	const struct backend *be = m->be;
	int C = l->in[2], R = rows * l->in[0] * l->in[1];
	const float *w = m->w;
	float *mean = l->aux, *var = l->aux + C;
	if (!train) {
		be->bn_forward(be, l->y, x, w + l->var[BN_MOVING_MEAN], w + l->var[BN_MOVING_VAR],
			       w + l->var[BN_GAMMA], w + l->var[BN_BETA], R, C, BN_EPSILON);
		return;
	}
	/* Two passes (the mean, then the squares about it): exact where a
	 * sum of squares less the squared sum would cancel. */
	float inv_n = (float)(1.0 / bn_count(m, l, rows));
	be->col_moment(be, mean, x, NULL, R, C, inv_n);
	if (m->sum)
		m->sum(m->sum_ctx, mean, (size_t)C);
	be->col_moment(be, var, x, mean, R, C, inv_n);
	if (m->sum)
		m->sum(m->sum_ctx, var, (size_t)C);
	be->bn_forward(be, l->y, x, mean, var, w + l->var[BN_GAMMA], w + l->var[BN_BETA], R, C,
		       BN_EPSILON);
	l->aux_rows = rows;
}

static void bn_backward(struct model *m, struct layer *l, const float *x, const float *dy,
			float *dx, int rows)
{
	const struct backend *be = m->be;
	int C = l->in[2], R = rows * l->in[0] * l->in[1];
	float *mean = l->aux, *var = l->aux + C, *sums = l->aux + 2 * C;
	be->bn_backward_sums(be, sums, dy, x, mean, var, R, C, BN_EPSILON);
	be->copy(be, m->g + l->var[BN_GAMMA], sums, sizeof(float) * (size_t)C);
	be->copy(be, m->g + l->var[BN_BETA], sums + C, sizeof(float) * (size_t)C);
	model_grad_ready(m, l->var[BN_GAMMA], l->var[BN_BETA] + (size_t)C - l->var[BN_GAMMA]);
	if (!dx)
		return;
	if (m->sum) /* the global batch's sums: every rank's values moved its mean */
		m->sum(m->sum_ctx, sums, 2 * (size_t)C);
	be->bn_backward(be, dx, dy, x, mean, var, m->w + l->var[BN_GAMMA], sums, R, C, BN_EPSILON,
			(float)(1.0 / bn_count(m, l, rows)));
}

static void bn_update_state(struct model *m, struct layer *l)
{
	const struct backend *be = m->be;
	int C = l->in[2];
	float *mean = l->aux, *var = l->aux + C, *unbiased = l->aux + 4 * C;
	double n = bn_count(m, l, l->aux_rows);
	be->ema_update(be, m->w + l->var[BN_MOVING_MEAN], mean, (size_t)C, BN_MOMENTUM);
	be->copy(be, unbiased, var, sizeof(float) * (size_t)C);
	be->scale(be, unbiased, (size_t)C, n > 1.0 ? (float)(n / (n - 1.0)) : 1.0f);
	be->ema_update(be, m->w + l->var[BN_MOVING_VAR], unbiased, (size_t)C, BN_MOMENTUM);
}

/* Counted as 4 per value: the two passes of statistics and the normalising
 * multiply-add. */
static double bn_flops(const struct layer *l) { return 4.0 * (double)l->in_size; }

static const struct layer_ops table[LAYER_KIND_COUNT] = {
	[LAYER_DENSE] = {.keras = "dense", .shape = dense_shape, .vars = dense_vars,
			 .init = dense_init, .forward = dense_forward,
			 .backward = dense_backward, .flops = dense_flops},
	[LAYER_CONV2D] = {.keras = "conv2d", .shape = conv_shape, .vars = conv_vars,
			  .init = conv_init, .forward = conv_forward,
			  .backward = conv_backward, .flops = conv_flops},
	[LAYER_MAXPOOL2D] = {.shape = pool_shape, .forward = pool_forward,
			     .backward = pool_backward, .flops = pool_flops},
	[LAYER_AVGPOOL2D] = {.shape = pool_shape, .forward = pool_forward,
			     .backward = pool_backward, .flops = pool_flops},
	[LAYER_GLOBALAVGPOOL] = {.shape = pool_shape, .forward = pool_forward,
				 .backward = pool_backward, .flops = pool_flops},
	[LAYER_RELU] = {.shape = same_shape, .forward = act_forward, .backward = act_backward,
			.flops = no_flops, .in_place = 1},
	[LAYER_GELU] = {.shape = same_shape, .forward = act_forward, .backward = act_backward,
			.flops = no_flops, .in_place = 1},
	[LAYER_TANH] = {.shape = same_shape, .forward = act_forward, .backward = act_backward,
			.flops = no_flops, .in_place = 1},
	[LAYER_FLATTEN] = {.shape = flatten_shape, .forward = flatten_forward,
			   .backward = flatten_backward, .flops = no_flops, .in_place = 1},
	[LAYER_DROPOUT] = {.shape = same_shape, .forward = dropout_forward,
			   .backward = dropout_backward, .flops = no_flops, .in_place = 1},
	[LAYER_BATCHNORM] = {.keras = "batch_normalization", .shape = bn_shape, .vars = bn_vars,
			     .init = bn_init, .forward = bn_forward, .backward = bn_backward,
			     .flops = bn_flops, .update_state = bn_update_state, .in_place = 1},
};

int layer_shape(struct layer *l, int classes, char *why, size_t len)
{
	const struct layer_ops *o = &table[l->spec.kind];
	l->in_size = (size_t)l->in[0] * l->in[1] * l->in[2];
	if (o->shape(l, classes, why, len))
		return -1;
	l->out_size = (size_t)l->out[0] * l->out[1] * l->out[2];
	return 0;
}

const char *layer_keras_name(const struct layer *l) { return table[l->spec.kind].keras; }

void layer_add_vars(struct layer *l, struct params *reg, const char *name, int trainable)
{
	if (table[l->spec.kind].vars)
		table[l->spec.kind].vars(l, reg, name, trainable);
}

void layer_update_state(struct model *m, struct layer *l)
{
	if (table[l->spec.kind].update_state)
		table[l->spec.kind].update_state(m, l);
}

void layer_init(const struct layer *l, struct rng *r, float *host_w)
{
	if (table[l->spec.kind].init)
		table[l->spec.kind].init(l, r, host_w);
}

int layer_owns_output(const struct layer *l)
{
	return l->spec.kind != LAYER_FLATTEN;
}

void layer_forward(struct model *m, struct layer *l, const float *x, int rows, int train)
{
	table[l->spec.kind].forward(m, l, x, rows, train);
}

void layer_backward(struct model *m, struct layer *l, const float *x, const float *dy, float *dx,
		    int rows)
{
	table[l->spec.kind].backward(m, l, x, dy, dx, rows);
}

int layer_in_place(const struct layer *l) { return table[l->spec.kind].in_place; }

double layer_flops(const struct layer *l) { return table[l->spec.kind].flops(l); }

int layer_var_is_state(const char *name)
{
	const char *last = strrchr(name, '/');
	last = last ? last + 1 : name;
	return !strcmp(last, bn_suffix[BN_MOVING_MEAN]) || !strcmp(last, bn_suffix[BN_MOVING_VAR]);
}
