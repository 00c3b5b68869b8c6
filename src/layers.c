/* The layer table of layers.h: one struct layer_ops per kind (batchnorm's
 * ops in layer_bn.c). */
#include "layers.h"
#include "backend.h"
#include "layer_ops.h"
#include "check.h"
#include "rng.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void set_flat(int *shape, size_t d)
{
	shape[0] = shape[1] = 1;
	shape[2] = (int)d;
}

/* z (rows, cols) = l->y += bias, and the activation l applies (l->act), if
 * any, into c->act_y in the same pass. */
static void bias_and_act(struct layer *l, const struct layer_ctx *c, int rows, int cols)
{
	c->be->bias_act(c->be, l->act >= 0 ? c->act_y : NULL, l->y, c->w[1], rows, cols,
			l->act >= 0 ? (enum act_kind)l->act : ACT_RELU);
}

/* dense: y (R,O) = x (R,I) @ kernel (I,O) + bias (O), on the flattened row;
 * on a sequence, on each token's last axis (Keras' Dense on [T, D]): the
 * rows are then R * T tokens of I = D. */
static int dense_shape(struct layer *l, int classes, char *why, size_t len)
{
	int units = l->spec.units ? l->spec.units : classes;
	if (l->in_seq) {
		l->out[0] = 1;
		l->out[1] = l->in[1];
		l->out[2] = units;
	} else {
		set_flat(l->out, (size_t)units);
	}
	return 0;
}

/* Rows of one product (a row's tokens on a sequence) and their width. */
static int dense_tokens(const struct layer *l) { return l->in_seq ? l->in[1] : 1; }
static size_t dense_in(const struct layer *l) { return l->in_seq ? (size_t)l->in[2] : l->in_size; }
static size_t dense_out(const struct layer *l) { return l->in_seq ? (size_t)l->out[2] : l->out_size; }

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

void layer_glorot(const struct layer *l, int var, struct rng *r, float *host_w, int ndim,
		  const long *dims)
{
	/* Keras' compute_fans: a matrix's rows and columns; beyond, the last
	 * two dimensions times the product of the others (a conv2d kernel's
	 * window, an EinsumDense kernel's first axes) */
	double field = 1, n = 1;
	for (int i = 0; i < ndim; i++) {
		n *= (double)dims[i];
		if (i < ndim - 2)
			field *= (double)dims[i];
	}
	double fan_in = (double)dims[ndim - 2] * field, fan_out = (double)dims[ndim - 1] * field;
	float limit = sqrtf(6.0f / (float)(fan_in + fan_out));
	float *k = host_w + l->var[var];
	for (size_t i = 0; i < (size_t)n; i++)
		k[i] = (2.0f * rng_uniform(r) - 1.0f) * limit;
}

static void dense_vars(struct layer *l, struct params *reg, const char *name, int trainable)
{
	long kdims[2] = {(long)dense_in(l), (long)dense_out(l)};
	if (trainable)
		kernel_and_bias(l, reg, name, 2, kdims);
}

static void dense_init(const struct layer *l, struct rng *r, float *host_w)
{
	const long kdims[2] = {(long)dense_in(l), (long)dense_out(l)};
	layer_glorot(l, 0, r, host_w, 2, kdims);
}

static void dense_forward(struct layer *l, const struct layer_ctx *c)
{
	const struct backend *be = c->be;
	int in = (int)dense_in(l), out = (int)dense_out(l), rows = c->rows * dense_tokens(l);
	be->matmul(be, l->y, c->x, c->w[0], rows, out, in, 0, 0, 0.0f);
	bias_and_act(l, c, rows, out);
}

static void dense_backward(struct layer *l, const struct layer_ctx *c, const float *dy, float *dx)
{
	const struct backend *be = c->be;
	int in = (int)dense_in(l), out = (int)dense_out(l), rows = c->rows * dense_tokens(l);
	be->matmul(be, c->g[0], c->x, dy, in, out, rows, 1, 0, 0.0f);
	be->bias_grad(be, c->g[1], dy, rows, out);
	layer_grads_ready(c, 1, (size_t)out);
	if (dx)
		be->matmul(be, dx, dy, c->w[0], rows, in, out, 0, 1, 0.0f);
}

static double dense_flops(const struct layer *l)
{
	return 2.0 * dense_tokens(l) * (double)dense_in(l) * (double)dense_out(l);
}

/* The activations (relu, gelu, ...): y = act(x), element-wise, any
 * shape; nothing to do forward when the layer before applies it. */
static int same_shape(struct layer *l, int classes, char *why, size_t len)
{
	memcpy(l->out, l->in, sizeof(l->out));
	return 0;
}

static void act_forward(struct layer *l, const struct layer_ctx *c)
{
	if (!l->fused)
		c->be->act_forward(c->be, l->y, c->x, (size_t)c->rows * l->out_size,
				   (enum act_kind)layer_spec_act(&l->spec));
}

static void act_backward(struct layer *l, const struct layer_ctx *c, const float *dy, float *dx)
{
	if (l->fused_back) /* the layer before applies act' (dx is dy: the plan) */
		return;
	if (dx)
		c->be->act_backward(c->be, dx, dy, c->x, (size_t)c->rows * l->out_size,
				    (enum act_kind)layer_spec_act(&l->spec));
}

/* flatten: the same values as one row of H * W * C (or T * D). */
static int flatten_shape(struct layer *l, int classes, char *why, size_t len)
{
	set_flat(l->out, l->in_size);
	l->seq = 0;
	return 0;
}

static void flatten_backward(struct layer *l, const struct layer_ctx *c, const float *dy,
			     float *dx)
{
	if (dx && dx != dy)
		c->be->copy(c->be, dx, dy, (size_t)c->rows * l->out_size * sizeof(float));
}

/* dropout: while training, each unit zeroed with probability rate and the
 * rest scaled by 1 / (1 - rate), the mask keyed by (seed, step, row of the
 * global batch, unit); the identity when evaluating. */
static struct dropout_key dropout_key(const struct layer *l, const struct layer_ctx *c)
{
	return (struct dropout_key){c->seed, (uint64_t)c->step, (uint64_t)c->row0, l->spec.rate};
}

static void dropout_forward(struct layer *l, const struct layer_ctx *c)
{
	const struct backend *be = c->be;
	struct dropout_key k = dropout_key(l, c);
	if (c->training)
		be->dropout(be, l->y, c->x, c->rows, (int)l->out_size, &k);
	else
		be->copy(be, l->y, c->x, (size_t)c->rows * l->out_size * sizeof(float));
}

static void dropout_backward(struct layer *l, const struct layer_ctx *c, const float *dy,
			     float *dx)
{
	struct dropout_key k = dropout_key(l, c);
	if (dx)
		c->be->dropout(c->be, dx, dy, c->rows, (int)l->out_size, &k);
}

static double no_flops(const struct layer *l) { return 0.0; }

/* add: y = x + x2, two outputs of the same shape (the model checks); its
 * gradient is dy for each, which the model passes on. */
static void add_forward(struct layer *l, const struct layer_ctx *c)
{
	c->be->add(c->be, l->y, c->x, c->x2, (size_t)c->rows * l->out_size, c->act_y,
		   l->act >= 0 ? (enum act_kind)l->act : ACT_RELU);
}

static double add_flops(const struct layer *l) { return (double)l->out_size; }

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
	if (l->in_seq)
		return snprintf(why, len, "takes images [H, W, C], but its input is a sequence "
				"of %d tokens of %d", l->in[1], l->in[2]), -1;
	if (set_window(l, s->size, s->size, s->stride, s->stride, s->same, why, len))
		return -1;
	l->out[0] = l->win.oh;
	l->out[1] = l->win.ow;
	l->out[2] = s->units;
	l->cols_size = (size_t)l->win.oh * l->win.ow * s->size * s->size * l->in[2];
	return 0;
}

/* [kh, kw, in, out], Keras' shape: row-major, the matrix of kh*kw*in rows
 * (im2col's column order) and out columns that conv2d multiplies by. */
static void conv_vars(struct layer *l, struct params *reg, const char *name, int trainable)
{
	long kdims[4] = {l->spec.size, l->spec.size, l->in[2], l->spec.units};
	if (trainable)
		kernel_and_bias(l, reg, name, 4, kdims);
}

/* Glorot-uniform over fan_in = kh*kw*in and fan_out = kh*kw*out (Keras). */
static void conv_init(const struct layer *l, struct rng *r, float *host_w)
{
	const long kdims[4] = {l->spec.size, l->spec.size, l->in[2], l->spec.units};
	layer_glorot(l, 0, r, host_w, 4, kdims);
}

/* The rows of one im2col and product: as many whole images as the
 * backend's cols_budget holds (at least one), else all. */
int layer_cols_rows(const struct layer *l, const struct backend *be, int rows)
{
	size_t per = l->cols_size ? l->cols_size : 1;
	size_t fit = be->cols_budget ? be->cols_budget / per : (size_t)rows;
	return fit < 1 ? 1 : fit > (size_t)rows ? rows : (int)fit;
}

/* y = conv(x) + bias, act(y): the backend's kernels, or a block of images
 * at a time (layer_cols_rows), windows, product, bias_act while in cache. */
static void conv_forward(struct layer *l, const struct layer_ctx *c)
{
	const struct backend *be = c->be;
	int pos = l->win.oh * l->win.ow, f = l->spec.units;
	if (be->conv) {
		be->conv(be, l->y, c->x, c->w[0], c->w[1], c->rows, &l->win, f);
		if (l->act >= 0)
			be->act_forward(be, c->act_y, l->y, (size_t)c->rows * l->out_size,
					(enum act_kind)l->act);
		return;
	}
	int k = (int)(l->cols_size / (size_t)pos), step = layer_cols_rows(l, be, c->rows);
	for (int r0 = 0; r0 < c->rows; r0 += step) {
		int n = c->rows - r0 < step ? c->rows - r0 : step;
		size_t out = (size_t)r0 * l->out_size;
		be->im2col(be, c->cols, c->x + (size_t)r0 * l->in_size, n, &l->win);
		be->matmul(be, l->y + out, c->cols, c->w[0], n * pos, f, k, 0, 0, 0.0f);
		be->bias_act(be, l->act >= 0 ? c->act_y + out : NULL, l->y + out, c->w[1], n * pos,
			     f, l->act >= 0 ? (enum act_kind)l->act : ACT_RELU);
	}
}

/* The kernel's gradient summed over blocks of images (the windows
 * recomputed: one buffer serves every layer), the bias's, then dx a block
 * at a time: the windows' gradients, folded back by col2im. */
static void conv_backward(struct layer *l, const struct layer_ctx *c, const float *dy, float *dx)
{
	const struct backend *be = c->be;
	int pos = l->win.oh * l->win.ow, f = l->spec.units;
	if (be->conv) {
		be->conv_backward_weights(be, c->g[0], c->g[1], c->x, dy, c->rows, &l->win, f);
		layer_grads_ready(c, 1, (size_t)f);
		if (dx)
			be->conv_backward_data(be, dx, dy, c->w[0], c->rows, &l->win, f);
		return;
	}
	int k = (int)(l->cols_size / (size_t)pos), step = layer_cols_rows(l, be, c->rows);
	for (int r0 = 0; r0 < c->rows; r0 += step) {
		int n = c->rows - r0 < step ? c->rows - r0 : step;
		be->im2col(be, c->cols, c->x + (size_t)r0 * l->in_size, n, &l->win);
		be->matmul(be, c->g[0], c->cols, dy + (size_t)r0 * l->out_size, k, f, n * pos, 1, 0,
			   r0 ? 1.0f : 0.0f);
	}
	be->bias_grad(be, c->g[1], dy, c->rows * pos, f);
	layer_grads_ready(c, 1, (size_t)f);
	if (!dx)
		return;
	for (int r0 = 0; r0 < c->rows; r0 += step) {
		int n = c->rows - r0 < step ? c->rows - r0 : step;
		be->matmul(be, c->cols, dy + (size_t)r0 * l->out_size, c->w[0], n * pos, k, f, 0, 1,
			   0.0f);
		be->col2im(be, dx + (size_t)r0 * l->in_size, c->cols, n, &l->win);
	}
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
	/* over a sequence: the mean over its tokens (GlobalAveragePooling1D) */
	if (l->in_seq && !global)
		return snprintf(why, len, "takes images [H, W, C], but its input is a sequence "
				"of %d tokens of %d", l->in[1], l->in[2]), -1;
	l->seq = 0;
	if (global ? set_window(l, l->in[0], l->in[1], 1, 1, 0, why, len)
		   : set_window(l, s->size, s->size, s->stride, s->stride, 0, why, len))
		return -1;
	l->out[0] = l->win.oh;
	l->out[1] = l->win.ow;
	l->out[2] = l->in[2];
	return 0;
}

static void pool_forward(struct layer *l, const struct layer_ctx *c)
{
	c->be->pool(c->be, l->y, c->x, c->rows, &l->win, l->spec.kind == LAYER_MAXPOOL2D);
}

static void pool_backward(struct layer *l, const struct layer_ctx *c, const float *dy, float *dx)
{
	if (dx)
		c->be->pool_backward(c->be, dx, dy, c->x, c->rows, &l->win,
				     l->spec.kind == LAYER_MAXPOOL2D);
}

static double pool_flops(const struct layer *l)
{
	return (double)l->out_size * l->win.kh * l->win.kw;
}

/* The pools' entry and every activation's: the same ops, the kind read
 * from the spec. */
#define POOL_ENTRY(name)                                                       \
	{.layer = name, .shape = pool_shape, .forward = pool_forward,          \
	 .backward = pool_backward, .flops = pool_flops, .image = 1}
#define ACT_ENTRY(id, name)                                                    \
	[LAYER_ACT + id] = {.layer = "activation", .shape = same_shape,        \
			    .forward = act_forward, .backward = act_backward,  \
			    .flops = no_flops, .in_place = 1},

static const struct layer_ops table[] = {
	[LAYER_DENSE] = {.keras = "dense", .shape = dense_shape, .vars = dense_vars,
			 .init = dense_init, .forward = dense_forward,
			 .backward = dense_backward, .flops = dense_flops, .fuses_act = 1},
	[LAYER_CONV2D] = {.keras = "conv2d", .shape = conv_shape, .vars = conv_vars,
			  .init = conv_init, .forward = conv_forward,
			  .backward = conv_backward, .flops = conv_flops, .fuses_act = 1,
			  .image = 1},
	[LAYER_MAXPOOL2D] = POOL_ENTRY("max_pooling2d"),
	[LAYER_AVGPOOL2D] = POOL_ENTRY("average_pooling2d"),
	[LAYER_GLOBALAVGPOOL] = POOL_ENTRY("global_average_pooling2d"),
	[LAYER_FLATTEN] = {.layer = "flatten", .shape = flatten_shape, .backward = flatten_backward, .flops = no_flops,
			   .in_place = 1, .alias = 1, .no_x_back = 1},
	[LAYER_DROPOUT] = {.layer = "dropout", .shape = same_shape, .forward = dropout_forward,
			   .backward = dropout_backward, .flops = no_flops, .in_place = 1,
			   .no_x_back = 1},
	[LAYER_ADD] = {.layer = "add", .shape = same_shape, .forward = add_forward, .flops = add_flops,
		       .in_place = 1, .no_x_back = 1, .merge = 1, .fuses_act = 1},
	[LAYER_LAYERNORM] = {.keras = "layer_normalization", .shape = layer_ln_shape,
			     .vars = layer_ln_vars, .init = layer_ln_init,
			     .forward = layer_ln_forward, .backward = layer_ln_backward,
			     .flops = layer_ln_flops},
	[LAYER_ATTENTION] = {.keras = "multi_head_attention", .shape = layer_attn_shape,
			     .vars = layer_attn_vars, .init = layer_attn_init,
			     .forward = layer_attn_forward, .backward = layer_attn_backward,
			     .flops = layer_attn_flops},
	[LAYER_EMBEDDING] = {.keras = "embedding", .shape = layer_embed_shape,
			     .vars = layer_embed_vars, .init = layer_embed_init,
			     .forward = layer_embed_forward, .backward = layer_embed_backward,
			     .flops = layer_embed_flops},
	[LAYER_UNEMBED] = {.layer = "reverse_embedding", .shape = layer_unembed_shape,
			   .forward = layer_unembed_forward, .backward = layer_unembed_backward,
			   .flops = layer_unembed_flops},
	[LAYER_POSEMBED] = {.keras = "position_embedding", .shape = layer_pos_shape,
			    .vars = layer_pos_vars, .init = layer_pos_init,
			    .forward = layer_pos_forward, .backward = layer_pos_backward,
			    .flops = layer_pos_flops, .in_place = 1, .no_x_back = 1},
	[LAYER_TOKENS] = {.layer = "reshape", .shape = layer_tokens_shape,
			  .backward = flatten_backward, .flops = no_flops, .in_place = 1,
			  .alias = 1, .no_x_back = 1, .image = 1},
	[LAYER_BATCHNORM] = {.keras = "batch_normalization", .shape = layer_bn_shape,
			     .vars = layer_bn_vars, .init = layer_bn_init,
			     .forward = layer_bn_forward, .backward = layer_bn_backward,
			     .flops = layer_bn_flops, .update_state = layer_bn_update_state,
			     .in_place = 1, .fuses_act = 1, .fuses_act_back = 1},
	ACT_KINDS(ACT_ENTRY)
};
#undef POOL_ENTRY
#undef ACT_ENTRY

/* A row per kind: the activations' (generated) end the table, and a row
 * left out before them stops the model's plan (layer_shape). */
_Static_assert(sizeof(table) / sizeof(*table) == LAYER_KIND_COUNT, "an entry per layer kind");

int layer_shape(struct layer *l, int classes, char *why, size_t len)
{
	const struct layer_ops *o = &table[l->spec.kind];
	if (!o->shape || !(o->forward || o->alias) || !(o->backward || o->merge) || !o->flops ||
	    !(o->layer || o->keras)) {
		char what[96];
		snprintf(what, sizeof(what), "no entry for %s in the table", layer_names[l->spec.kind]);
		check_fail("layers", "layer_shape", what, __FILE__, __LINE__);
	}
	l->in_size = (size_t)l->in[0] * l->in[1] * l->in[2];
	l->seq = l->in_seq; /* a kind's shape says where it changes */
	if (o->shape(l, classes, why, len))
		return -1;
	l->out_size = (size_t)l->out[0] * l->out[1] * l->out[2];
	return 0;
}

const char *layer_keras_name(const struct layer *l) { return table[l->spec.kind].keras; }

const char *layer_class_name(const struct layer *l)
{
	const struct layer_ops *o = &table[l->spec.kind];
	if (l->spec.kind == LAYER_GLOBALAVGPOOL && l->in_seq)
		return "global_average_pooling1d"; /* over tokens */
	return o->layer ? o->layer : o->keras;
}

void layer_add_vars(struct layer *l, struct params *reg, const char *name, int trainable)
{
	if (table[l->spec.kind].vars)
		table[l->spec.kind].vars(l, reg, name, trainable);
}

void layer_update_state(struct layer *l, const struct layer_ctx *c)
{
	if (table[l->spec.kind].update_state)
		table[l->spec.kind].update_state(l, c);
}

void layer_init(const struct layer *l, struct rng *r, float *host_w)
{
	if (table[l->spec.kind].init)
		table[l->spec.kind].init(l, r, host_w);
}

int layer_fuses(const struct layer *l, const struct layer *next)
{
	return table[l->spec.kind].fuses_act && layer_spec_act(&next->spec) >= 0;
}

int layer_is_alias(const struct layer *l) { return table[l->spec.kind].alias; }

int layer_fuses_back(const struct layer *l) { return table[l->spec.kind].fuses_act_back; }

void layer_forward(struct layer *l, const struct layer_ctx *c)
{
	if (!table[l->spec.kind].alias) /* its output is its input already */
		table[l->spec.kind].forward(l, c);
}

void layer_backward(struct layer *l, const struct layer_ctx *c, const float *dy, float *dx)
{
	table[l->spec.kind].backward(l, c, dy, dx);
}

int layer_in_place(const struct layer *l) { return table[l->spec.kind].in_place; }

int layer_reads_x_back(const struct layer *l) { return !table[l->spec.kind].no_x_back; }

int layer_is_merge(const struct layer *l) { return table[l->spec.kind].merge; }

int layer_kind_image(enum layer_kind kind) { return table[kind].image; }

double layer_flops(const struct layer *l) { return table[l->spec.kind].flops(l); }
