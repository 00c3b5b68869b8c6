/* The dense-stack model of model.h. */
#include "model.h"
#include "check.h"
#include "rng.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define RNG_STREAM_INIT 1

void model_init(struct model *m, const struct backend *be, int in_dim,
		int classes, const int *hidden, int n_hidden, enum act_kind act,
		int max_rows)
{
	memset(m, 0, sizeof(*m));
	m->be = be;
	m->act = act;
	m->in_dim = in_dim;
	m->classes = classes;
	m->max_rows = max_rows;
	m->n_layers = n_hidden + 1;
	params_init(&m->reg);
	int fan_in = in_dim;
	m->max_width = in_dim > classes ? in_dim : classes;
	for (int l = 0; l < m->n_layers; l++) {
		int fan_out = l < n_hidden ? hidden[l] : classes;
		char layer[32], name[PARAM_NAME_LEN];
		params_layer_name(l, layer, sizeof(layer));
		long kdims[2] = {fan_in, fan_out}, bdims[1] = {fan_out};
		snprintf(name, sizeof(name), "%s/kernel", layer);
		m->layer[l].kernel = params_add(&m->reg, name, 2, kdims);
		snprintf(name, sizeof(name), "%s/bias", layer);
		m->layer[l].bias = params_add(&m->reg, name, 1, bdims);
		m->layer[l].in = fan_in;
		m->layer[l].out = fan_out;
		if (fan_out > m->max_width)
			m->max_width = fan_out;
		fan_in = fan_out;
	}
	size_t P = m->reg.total, R = (size_t)max_rows;
	m->w = be->alloc(be, P * sizeof(float));
	m->g = be->alloc(be, P * sizeof(float));
	m->x = be->alloc(be, R * in_dim * sizeof(float));
	m->y = be->alloc(be, R * sizeof(int32_t));
	for (int l = 0; l < m->n_layers; l++) {
		m->z[l] = be->alloc(be, R * m->layer[l].out * sizeof(float));
		if (l < n_hidden)
			m->a[l] = be->alloc(be, R * m->layer[l].out * sizeof(float));
	}
	m->dlogits = be->alloc(be, R * classes * sizeof(float));
	for (int i = 0; i < 2; i++)
		m->scratch[i] = be->alloc(be, R * m->max_width * sizeof(float));
	m->stats = be->alloc(be, 2 * sizeof(float));
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
	for (int l = 0; l < m->n_layers; l++) {
		be->free(be, m->z[l]);
		be->free(be, m->a[l]);
	}
	be->free(be, m->dlogits);
	be->free(be, m->scratch[0]);
	be->free(be, m->scratch[1]);
	be->free(be, m->stats);
	memset(m, 0, sizeof(*m));
}

void model_glorot(const struct model *m, uint64_t seed, float *host_w)
{
	struct rng r;
	rng_init(&r, seed, RNG_STREAM_INIT);
	memset(host_w, 0, m->reg.total * sizeof(float));
	for (int l = 0; l < m->n_layers; l++) {
		const struct dense *d = &m->layer[l];
		float limit = sqrtf(6.0f / (float)(d->in + d->out));
		float *k = host_w + d->kernel;
		for (size_t i = 0; i < (size_t)d->in * d->out; i++)
			k[i] = (2.0f * rng_uniform(&r) - 1.0f) * limit;
	}
}

double model_bytes(int in_dim, int classes, const int *hidden, int n_hidden, int max_rows,
		   size_t *params)
{
	double P = 0, R = max_rows, act = in_dim + 2.0 * classes, widest = in_dim;
	int fan_in = in_dim;
	for (int l = 0; l <= n_hidden; l++) {
		int fan_out = l < n_hidden ? hidden[l] : classes;
		P += (double)fan_in * fan_out + fan_out + 2 * PARAM_ALIGN;
		act += 2.0 * fan_out; /* z and a */
		widest = fan_out > widest ? fan_out : widest;
		fan_in = fan_out;
	}
	*params = P < 1e18 ? (size_t)P : (size_t)1e18;
	return 4.0 * (2 * P + R * (act + 2 * widest + 1)); /* w, g; x, y, z, a, scratch */
}

double model_flops_per_row(const struct model *m)
{
	double f = 0;
	for (int l = 0; l < m->n_layers; l++) {
		double mac = (double)m->layer[l].in * m->layer[l].out;
		f += 2 * mac * (l ? 3 : 2); /* forward, weight grad, input grad */
	}
	return f;
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

void model_forward(struct model *m, int rows, float grad_scale)
{
	const struct backend *be = m->be;
	const float *in = m->x;
	for (int l = 0; l < m->n_layers; l++) {
		const struct dense *d = &m->layer[l];
		int last = l == m->n_layers - 1;
		be->matmul(be, m->z[l], in, m->w + d->kernel, rows, d->out, d->in, 0, 0, 0.0f);
		be->bias_act(be, last ? NULL : m->a[l], m->z[l], m->w + d->bias, rows, d->out, m->act);
		in = m->a[l];
	}
	be->xent(be, grad_scale > 0.0f ? m->dlogits : NULL, m->stats, m->z[m->n_layers - 1],
		 m->y, rows, m->classes, grad_scale);
}

void model_take_stats(struct model *m, float out[2])
{
	static const float zero[2] = {0.0f, 0.0f};
	m->be->copy_out(m->be, out, m->stats, 2 * sizeof(float));
	m->be->copy_in(m->be, m->stats, zero, sizeof(zero));
}

void model_backward(struct model *m, int rows, grad_ready_fn ready, void *ctx)
{
	const struct backend *be = m->be;
	const float *dz = m->dlogits; /* (R, O_l) gradient of layer l's output */
	for (int l = m->n_layers - 1; l >= 0; l--) {
		const struct dense *d = &m->layer[l];
		const float *in = l ? m->a[l - 1] : m->x; /* (R, I_l) */
		be->matmul(be, m->g + d->kernel, in, dz, d->in, d->out, rows, 1, 0, 0.0f);
		be->bias_grad(be, m->g + d->bias, dz, rows, d->out);
		if (ready)
			ready(ctx, m->g + d->kernel, d->bias + (size_t)d->out - d->kernel);
		if (l == 0)
			break; /* no gradient for the data */
		float *da = m->scratch[l & 1]; /* (R, I_l) */
		be->matmul(be, da, dz, m->w + d->kernel, rows, d->in, d->out, 0, 1, 0.0f);
		be->act_backward(be, da, da, m->z[l - 1], (size_t)rows * d->in, m->act);
		dz = da;
	}
}
