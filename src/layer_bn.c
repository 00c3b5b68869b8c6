/* The batchnorm layer of the layer table (layer_ops.h). */
#include "backend.h"
#include "layer_ops.h"

#include <stdio.h>
#include <string.h>

/* batchnorm: over the last axis (channels), Keras' defaults. While
 * training, each channel is normalised with the mean and (biased) variance
 * of its values in the batch: this rank's rows, or with c->sum (--sync-bn)
 * every rank's; evaluating, with the moving statistics. After each step
 * taken the moving statistics follow the batch's: moving = momentum *
 * moving + (1 - momentum) * batch, the variance's Bessel-corrected (as
 * PyTorch and Keras' fused kernel do). */
#define BN_MOMENTUM 0.99f
#define BN_EPSILON 1e-3f

enum { BN_GAMMA, BN_BETA, BN_MOVING_MEAN, BN_MOVING_VAR };

int layer_bn_shape(struct layer *l, int classes, char *why, size_t len)
{
	memcpy(l->out, l->in, sizeof(l->out));
	l->aux_size = 5 * (size_t)l->in[2];
	return 0;
}

static const char *const bn_suffix[] = {"gamma", "beta", "moving_mean", "moving_variance"};

void layer_bn_vars(struct layer *l, struct params *reg, const char *name, int trainable)
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

void layer_bn_init(const struct layer *l, struct rng *r, float *host_w)
{
	for (int j = 0; j < l->in[2]; j++)
		host_w[l->var[BN_GAMMA] + j] = host_w[l->var[BN_MOVING_VAR] + j] = 1.0f;
}

/* The values each channel's statistics are over: this rank's positions, or
 * the global batch's under --sync-bn. */
static double bn_count(const struct layer *l, const struct layer_ctx *c, int rows)
{
	double per_row = (double)l->in[0] * l->in[1];
	return per_row * (c->sum ? (double)c->global_rows : (double)rows);
}

void layer_bn_forward(struct layer *l, const struct layer_ctx *c)
{
	const struct backend *be = c->be;
	int C = l->in[2], R = c->rows * l->in[0] * l->in[1];
	float *const *w = c->w;
	float *mean = l->aux, *var = l->aux + C;
	/* An activation after it (layer.act) in the same pass; only its
	 * output where the layer drops y (layer.drops_y: l->y is NULL). */
	enum act_kind act = l->act >= 0 ? (enum act_kind)l->act : ACT_RELU;
	if (!c->training) {
		be->bn_forward(be, l->y, c->x, w[BN_MOVING_MEAN], w[BN_MOVING_VAR], w[BN_GAMMA],
			       w[BN_BETA], R, C, BN_EPSILON, c->act_y, act);
		return;
	}
	l->aux_rows = c->rows;
	if (be->bn_train_forward && !c->sum) { /* the backend's own kernels */
		be->bn_train_forward(be, l->y, mean, var, c->x, w[BN_GAMMA], w[BN_BETA], R, C,
				     BN_EPSILON, c->act_y, act);
		return;
	}
	/* Two passes (the mean, then the squares about it): exact where a
	 * sum of squares less the squared sum would cancel. */
	float inv_n = (float)(1.0 / bn_count(l, c, c->rows));
	be->col_moment(be, mean, c->x, NULL, R, C, inv_n);
	if (c->sum)
		c->sum(c->sum_ctx, mean, (size_t)C);
	be->col_moment(be, var, c->x, mean, R, C, inv_n);
	if (c->sum)
		c->sum(c->sum_ctx, var, (size_t)C);
	be->bn_forward(be, l->y, c->x, mean, var, w[BN_GAMMA], w[BN_BETA], R, C, BN_EPSILON,
		       c->act_y, act);
}

void layer_bn_backward(struct layer *l, const struct layer_ctx *c, const float *dy, float *dx)
{
	const struct backend *be = c->be;
	int C = l->in[2], R = c->rows * l->in[0] * l->in[1];
	float *mean = l->aux, *var = l->aux + C, *sums = l->aux + 2 * C;
	/* The activation after it, its backward too (layer.act_back): dy is the
	 * gradient of act(y). */
	const float *z = !l->act_back ? NULL : l->drops_y ? c->act_y : l->y;
	enum act_kind act = l->act_back ? (enum act_kind)l->act : ACT_RELU;
	be->bn_backward_sums(be, sums, dy, c->x, mean, var, R, C, BN_EPSILON, z, act);
	be->copy(be, c->g[BN_GAMMA], sums, sizeof(float) * (size_t)C);
	be->copy(be, c->g[BN_BETA], sums + C, sizeof(float) * (size_t)C);
	layer_grads_ready(c, BN_BETA, (size_t)C);
	if (!dx)
		return;
	if (c->sum) /* the global batch's sums: every rank's values moved its mean */
		c->sum(c->sum_ctx, sums, 2 * (size_t)C);
	be->bn_backward(be, dx, dy, c->x, mean, var, c->w[BN_GAMMA], sums, R, C, BN_EPSILON,
			(float)(1.0 / bn_count(l, c, c->rows)), z, act);
}

void layer_bn_update_state(struct layer *l, const struct layer_ctx *c)
{
	const struct backend *be = c->be;
	int C = l->in[2];
	float *mean = l->aux, *var = l->aux + C, *unbiased = l->aux + 4 * C;
	double n = bn_count(l, c, l->aux_rows);
	be->ema_update(be, c->w[BN_MOVING_MEAN], mean, (size_t)C, BN_MOMENTUM);
	be->copy(be, unbiased, var, sizeof(float) * (size_t)C);
	be->scale(be, unbiased, (size_t)C, n > 1.0 ? (float)(n / (n - 1.0)) : 1.0f);
	be->ema_update(be, c->w[BN_MOVING_VAR], unbiased, (size_t)C, BN_MOMENTUM);
}

/* Counted as 4 per value: the two passes of statistics and the normalising
 * multiply-add. */
double layer_bn_flops(const struct layer *l) { return 4.0 * (double)l->in_size; }

int layer_var_is_state(const char *name)
{
	const char *last = strrchr(name, '/');
	last = last ? last + 1 : name;
	return !strcmp(last, bn_suffix[BN_MOVING_MEAN]) || !strcmp(last, bn_suffix[BN_MOVING_VAR]);
}
