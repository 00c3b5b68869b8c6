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
	void (*vars)(struct layer *l, struct params *reg, const char *name);
	void (*init)(const struct layer *l, struct rng *r, float *host_w);
	void (*forward)(struct model *m, struct layer *l, const float *x, int rows, int train);
	void (*backward)(struct model *m, struct layer *l, const float *x, const float *dy,
			 float *dx, int rows);
	double (*flops)(const struct layer *l);
	int in_place; /* backward may write dx over dy; output may alias input */
};

static void set_flat(int *shape, size_t d)
{
	shape[0] = shape[1] = 1;
	shape[2] = (int)d;
}

/* dense: y (R,O) = x (R,I) @ kernel (I,O) + bias (O), on the flattened row. */
static int dense_shape(struct layer *l, int classes, char *why, size_t len)
{
	set_flat(l->out, l->spec.units ? (size_t)l->spec.units : (size_t)classes);
	return 0;
}

static void dense_vars(struct layer *l, struct params *reg, const char *name)
{
	char full[PARAM_NAME_LEN];
	long kdims[2] = {(long)l->in_size, (long)l->out_size}, bdims[1] = {(long)l->out_size};
	snprintf(full, sizeof(full), "%s/kernel", name);
	l->var[0] = params_add(reg, full, 2, kdims);
	snprintf(full, sizeof(full), "%s/bias", name);
	l->var[1] = params_add(reg, full, 1, bdims);
	l->n_vars = 2;
}

/* Glorot-uniform kernel, zero bias (Keras' defaults). */
static void dense_init(const struct layer *l, struct rng *r, float *host_w)
{
	float limit = sqrtf(6.0f / (float)(l->in_size + l->out_size));
	float *k = host_w + l->var[0];
	for (size_t i = 0; i < l->in_size * l->out_size; i++)
		k[i] = (2.0f * rng_uniform(r) - 1.0f) * limit;
}

static void dense_forward(struct model *m, struct layer *l, const float *x, int rows, int train)
{
	const struct backend *be = m->be;
	int in = (int)l->in_size, out = (int)l->out_size;
	be->matmul(be, l->y, x, m->w + l->var[0], rows, out, in, 0, 0, 0.0f);
	/* An activation right after is applied in the same pass. */
	const struct layer *next = l + 1 < m->layer + m->n_layers ? l + 1 : NULL;
	int act = next && next->fused ? layer_spec_act(&next->spec) : -1;
	be->bias_act(be, act >= 0 ? next->y : NULL, l->y, m->w + l->var[1], rows, out,
		     act >= 0 ? (enum act_kind)act : ACT_RELU);
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

static const struct layer_ops table[LAYER_KIND_COUNT] = {
	[LAYER_DENSE] = {.keras = "dense", .shape = dense_shape, .vars = dense_vars,
			 .init = dense_init, .forward = dense_forward,
			 .backward = dense_backward, .flops = dense_flops},
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
};

int layer_shape(struct layer *l, int classes, char *why, size_t len)
{
	const struct layer_ops *o = &table[l->spec.kind];
	l->in_size = (size_t)l->in[0] * l->in[1] * l->in[2];
	if (!o->shape) {
		snprintf(why, len, "%s is not built yet (issue 8 continues)",
			 layer_names[l->spec.kind]);
		return -1;
	}
	if (o->shape(l, classes, why, len))
		return -1;
	l->out_size = (size_t)l->out[0] * l->out[1] * l->out[2];
	return 0;
}

const char *layer_keras_name(const struct layer *l) { return table[l->spec.kind].keras; }

void layer_add_vars(struct layer *l, struct params *reg, const char *name)
{
	if (table[l->spec.kind].vars)
		table[l->spec.kind].vars(l, reg, name);
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
