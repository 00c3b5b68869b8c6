/* The layer-list model of model.h. */
#include "model.h"
#include "check.h"
#include "log.h"
#include "rng.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define RNG_STREAM_INIT 1

int model_specs(const struct config *cfg, struct layer_spec *spec, int *n)
{
	if (cfg->model[0])
		return layer_spec_parse(cfg->model, "--model", spec, MODEL_MAX_LAYERS, n);
	*n = layer_spec_mlp(cfg->hidden, cfg->n_hidden, (enum act_kind)cfg->act, spec,
			    MODEL_MAX_LAYERS);
	return 0;
}

int model_input_shape(const struct config *cfg, const char *path, const int data[3],
		      int in[3])
{
	int dim = data[0] * data[1] * data[2];
	memcpy(in, data, 3 * sizeof(*in));
	if (!cfg->input_shape[0])
		return 0;
	char end;
	if (sscanf(cfg->input_shape, "%d,%d,%d%c", &in[0], &in[1], &in[2], &end) != 3 ||
	    in[0] < 1 || in[1] < 1 || in[2] < 1)
		return user_error("--input-shape %s: expected H,W,C (three positive integers, "
				  "e.g. 28,28,1)", cfg->input_shape);
	/* Images ([N, H, W, C] data) have their shape: --input-shape may only
	 * repeat it. */
	if ((data[0] != 1 || data[1] != 1) && memcmp(in, data, 3 * sizeof(*in)))
		return user_error("--input-shape %s does not match the images of %s, %d,%d,%d "
				  "(drop --input-shape, or give the data's shape)", cfg->input_shape,
				  path, data[0], data[1], data[2]);
	if ((long long)in[0] * in[1] * in[2] != dim)
		return user_error("--input-shape %s is %lld values per row; the data's rows have %d",
				  cfg->input_shape, (long long)in[0] * in[1] * in[2], dim);
	return 0;
}

int model_plan(struct model *m, const struct layer_spec *spec, int n, const int in[3],
	       int classes, uint64_t seed)
{
	memset(m, 0, sizeof(*m));
	memcpy(m->in, in, sizeof(m->in));
	m->in_dim = in[0] * in[1] * in[2];
	m->classes = classes;
	m->seed = seed;
	m->n_layers = n;
	m->max_width = (size_t)m->in_dim > (size_t)classes ? (size_t)m->in_dim : (size_t)classes;
	params_init(&m->reg);
	/* Keras' per-kind counters: dense, dense_1, conv2d, conv2d_1, ... */
	const char *names[MODEL_MAX_LAYERS];
	char var_names[MODEL_MAX_LAYERS][PARAM_NAME_LEN];
	int counts[MODEL_MAX_LAYERS] = {0}, kinds = 0, has_vars = 0;
	const int *shape = in;
	for (int i = 0; i < n; i++) {
		struct layer *l = &m->layer[i];
		char why[160];
		var_names[i][0] = 0;
		l->spec = spec[i];
		memcpy(l->in, shape, sizeof(l->in));
		if (layer_shape(l, classes, why, sizeof(why)))
			return user_error("--model: layer %d (%s): %s", i + 1,
					  layer_names[spec[i].kind], why);
		/* An activation the layer before can apply in its own pass
		 * (the table's fuses_act column) is applied there. */
		l->act = -1;
		l->fused = i > 0 && layer_fuses(&m->layer[i - 1], l);
		if (l->fused)
			m->layer[i - 1].act = layer_spec_act(&l->spec);
		l->needs_dx = has_vars;
		const char *keras = layer_keras_name(l);
		if (keras) {
			int k = 0;
			while (k < kinds && strcmp(names[k], keras))
				k++;
			if (k == kinds)
				names[kinds++] = keras;
			params_layer_name(keras, counts[k]++, var_names[i], sizeof(var_names[i]));
			layer_add_vars(l, &m->reg, var_names[i], 1);
			has_vars = 1;
		}
		if (l->out_size > m->max_width)
			m->max_width = l->out_size;
		if (l->cols_size > m->max_cols)
			m->max_cols = l->cols_size;
		shape = l->out;
	}
	/* The non-trainable variables after every trainable one (params.h). */
	for (int i = 0; i < n; i++)
		if (var_names[i][0])
			layer_add_vars(&m->layer[i], &m->reg, var_names[i], 0);
	const struct layer *last = &m->layer[n - 1];
	if (last->out_size != (size_t)classes)
		return user_error("--model: the last layer (%d, %s) gives %zu values per row; the "
				  "data has %d classes (end with dense)", n,
				  layer_names[last->spec.kind], last->out_size, classes);
	return 0;
}

void model_init(struct model *m, const struct backend *be, int in_dim, int classes,
		const int *hidden, int n_hidden, enum act_kind act, int max_rows)
{
	struct layer_spec spec[MODEL_MAX_LAYERS];
	int n = layer_spec_mlp(hidden, n_hidden, act, spec, MODEL_MAX_LAYERS);
	const int in[3] = {1, 1, in_dim};
	if (model_plan(m, spec, n, in, classes, 0))
		abort();
	model_alloc(m, be, max_rows);
}

double model_bytes(const struct model *m, int max_rows)
{
	double R = max_rows,
	       per_row = m->in_dim + 2.0 * m->classes + 2.0 * m->max_width + 1 + m->max_cols;
	double aux = 0;
	for (int i = 0; i < m->n_layers; i++) {
		if (!layer_is_alias(&m->layer[i]))
			per_row += (double)m->layer[i].out_size;
		aux += (double)m->layer[i].aux_size;
	}
	/* w, g, the layers' own; x, y, outputs, scratch */
	return 4.0 * (2.0 * (double)m->reg.total + aux + R * per_row);
}

void model_alloc(struct model *m, const struct backend *be, int max_rows)
{
	m->be = be;
	m->max_rows = max_rows;
	size_t P = m->reg.total, R = (size_t)max_rows;
	size_t room = m->room > P ? m->room : P;
	m->w = be->alloc(be, room * sizeof(float));
	m->g = be->alloc(be, room * sizeof(float));
	m->x = be->alloc(be, R * m->in_dim * sizeof(float));
	m->y = be->alloc(be, R * sizeof(int32_t));
	const float *in = m->x;
	for (int i = 0; i < m->n_layers; i++) {
		struct layer *l = &m->layer[i];
		l->y = !layer_is_alias(l) ? be->alloc(be, R * l->out_size * sizeof(float))
					  : (float *)in;
		l->aux = l->aux_size ? be->alloc(be, l->aux_size * sizeof(float)) : NULL;
		in = l->y;
	}
	m->dlogits = be->alloc(be, R * m->classes * sizeof(float));
	for (int i = 0; i < 2; i++)
		m->scratch[i] = be->alloc(be, R * m->max_width * sizeof(float));
	m->stats = be->alloc(be, 2 * sizeof(float));
	m->cols = m->max_cols ? be->alloc(be, R * m->max_cols * sizeof(float)) : NULL;
}

void model_free(struct model *m)
{
	const struct backend *be = m->be;
	if (!be)
		return;
	be->free(be, m->w);
	be->free(be, m->g);
	be->free(be, m->x);
	be->free(be, m->y);
	for (int i = 0; i < m->n_layers; i++) {
		if (!layer_is_alias(&m->layer[i]))
			be->free(be, m->layer[i].y);
		be->free(be, m->layer[i].aux);
	}
	be->free(be, m->dlogits);
	be->free(be, m->scratch[0]);
	be->free(be, m->scratch[1]);
	be->free(be, m->stats);
	be->free(be, m->cols);
	memset(m, 0, sizeof(*m));
}

void model_glorot(const struct model *m, uint64_t seed, float *host_w)
{
	struct rng r;
	rng_init(&r, seed, RNG_STREAM_INIT);
	memset(host_w, 0, m->reg.total * sizeof(float));
	for (int i = 0; i < m->n_layers; i++)
		layer_init(&m->layer[i], &r, host_w);
}

double model_flops_per_row(const struct model *m)
{
	double f = 0;
	for (int i = 0; i < m->n_layers; i++) {
		const struct layer *l = &m->layer[i];
		double fwd = layer_flops(l);
		/* backward: the weight gradient, and the input's unless none is needed */
		f += fwd * (l->n_vars ? (l->needs_dx ? 3 : 2) : 1);
	}
	return f;
}

void model_text(const struct model *m, const struct config *cfg, char *buf, size_t len)
{
	if (cfg->model[0]) {
		struct layer_spec spec[MODEL_MAX_LAYERS];
		for (int i = 0; i < m->n_layers; i++)
			spec[i] = m->layer[i].spec;
		layer_spec_text(spec, m->n_layers, buf, len);
		return;
	}
	size_t used = (size_t)snprintf(buf, len, "%d", m->in_dim);
	for (int i = 0; i < cfg->n_hidden && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "-%d", cfg->hidden[i]);
	if (used < len)
		snprintf(buf + used, len - used, "-%d %s", m->classes, act_names[cfg->act]);
}

void model_set_batch(struct model *m, const float *x, const int32_t *y, int rows)
{
	m->be->copy_in(m->be, m->x, x, (size_t)rows * m->in_dim * sizeof(float));
	m->be->copy_in(m->be, m->y, y, (size_t)rows * sizeof(int32_t));
}

void model_set_batch_async(struct model *m, const float *x, const int32_t *y, int rows)
{
	m->be->copy_in_async(m->be, m->x, x, (size_t)rows * m->in_dim * sizeof(float));
	m->be->copy_in_async(m->be, m->y, y, (size_t)rows * sizeof(int32_t));
}

void model_sync_bn(struct model *m, sum_fn sum, void *ctx, long global_rows)
{
	m->sum = sum;
	m->sum_ctx = ctx;
	m->global_rows = global_rows;
}

/* What layer i may touch in a call over rows rows: its input, the
 * output of the activation it applies, its variables' and gradients'
 * places, the shared im2col buffer, the step's facts and the listeners. */
static struct layer_ctx layer_ctx(const struct model *m, int i, int rows, int training,
				  grad_ready_fn ready, void *ready_ctx)
{
	const struct layer *l = &m->layer[i];
	struct layer_ctx c = {.be = m->be, .rows = rows, .training = training,
			      .x = i ? m->layer[i - 1].y : m->x,
			      .act_y = l->act >= 0 ? m->layer[i + 1].y : NULL,
			      .cols = m->cols, .seed = m->seed ^ (uint64_t)i << 56,
			      .step = m->step, .row0 = m->row0, .sum = m->sum,
			      .sum_ctx = m->sum_ctx, .global_rows = m->global_rows,
			      .ready = ready, .ready_ctx = ready_ctx};
	for (int v = 0; v < l->n_vars; v++) {
		c.w[v] = m->w + l->var[v];
		c.g[v] = m->g + l->var[v];
	}
	return c;
}

void model_update_state(struct model *m)
{
	for (int i = 0; i < m->n_layers; i++) {
		struct layer_ctx c = layer_ctx(m, i, 0, 1, NULL, NULL);
		layer_update_state(&m->layer[i], &c);
	}
}

void model_set_position(struct model *m, long step, long row0)
{
	m->step = step;
	m->row0 = row0;
}

void model_layer_forward(struct model *m, int i, int rows, int training)
{
	struct layer_ctx c = layer_ctx(m, i, rows, training, NULL, NULL);
	layer_forward(&m->layer[i], &c);
}

void model_forward(struct model *m, int rows, int training, float grad_scale)
{
	for (int i = 0; i < m->n_layers; i++)
		model_layer_forward(m, i, rows, training);
	m->be->xent(m->be, training ? m->dlogits : NULL, m->stats, m->layer[m->n_layers - 1].y,
		    m->y, rows, m->classes, grad_scale);
}

void model_take_stats(struct model *m, float out[2])
{
	static const float zero[2] = {0.0f, 0.0f};
	m->be->copy_out(m->be, out, m->stats, 2 * sizeof(float));
	m->be->copy_in(m->be, m->stats, zero, sizeof(zero));
}

float *model_dx(struct model *m, const struct layer *l, const float *dy, int *next)
{
	if (!l->needs_dx)
		return NULL;
	if (layer_in_place(l) && dy != m->dlogits)
		return (float *)dy;
	float *dx = m->scratch[*next];
	*next ^= 1;
	return dx;
}

void model_layer_backward(struct model *m, int i, int rows, const float *dy, float *dx,
			  grad_ready_fn ready, void *ctx)
{
	struct layer_ctx c = layer_ctx(m, i, rows, 1, ready, ctx);
	layer_backward(&m->layer[i], &c, dy, dx);
}

void model_backward(struct model *m, int rows, grad_ready_fn ready, void *ctx)
{
	const float *dy = m->dlogits; /* (R, out) gradient of layer i's output */
	int next = 0;                 /* the scratch buffer a layer writes next */
	for (int i = m->n_layers - 1; i >= 0; i--) {
		float *dx = model_dx(m, &m->layer[i], dy, &next);
		model_layer_backward(m, i, rows, dy, dx, ready, ctx);
		if (!dx)
			break; /* no layer below has variables */
		dy = dx;
	}
}
