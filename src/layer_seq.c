/* The sequence layers of the layer table (layer_ops.h) but attention:
 * layer normalization, token embeddings, learned position embeddings, and
 * an image's pixels as tokens. Shapes: a sequence of T tokens of width D is
 * the row {1, T, D} (layer.seq). */
#include "backend.h"
#include "layer_ops.h"
#include "rng.h"

#include <stdio.h>
#include <string.h>

/* A sequence layer's input must be a sequence: 0, or -1 with why. */
int layer_needs_seq(const struct layer *l, char *why, size_t len)
{
	if (l->in_seq)
		return 0;
	snprintf(why, len, "takes a sequence of tokens [T, D], but its input is %s %dx%dx%d "
		 "(make tokens of an image with tokens, of token ids with embedding)",
		 l->in[0] * l->in[1] == 1 ? "a flat row of" : "an image of", l->in[0], l->in[1],
		 l->in[2]);
	return -1;
}

/* layernorm: each position's last axis (a token's D values, an image
 * pixel's channels) normalised to mean 0 and variance 1, then scaled by
 * gamma and shifted by beta ([C] each); keeps each position's mean and
 * rstd for the backward. */
enum { LN_GAMMA, LN_BETA };

static int positions(const struct layer *l) { return l->in[0] * l->in[1]; }

int layer_ln_shape(struct layer *l, int classes, char *why, size_t len)
{
	memcpy(l->out, l->in, sizeof(l->out));
	l->keep_size = 2 * (size_t)positions(l);
	return 0;
}

void layer_ln_vars(struct layer *l, struct params *reg, const char *name, int trainable)
{
	static const char *const suffix[] = {"gamma", "beta"};
	long dims[1] = {l->in[2]};
	if (!trainable)
		return;
	for (int i = 0; i < 2; i++) {
		char full[PARAM_NAME_LEN];
		snprintf(full, sizeof(full), "%s/%s", name, suffix[i]);
		l->var[i] = params_add(reg, full, 1, dims);
	}
	l->n_vars = 2;
}

void layer_ln_init(const struct layer *l, struct rng *r, float *host_w)
{
	for (int j = 0; j < l->in[2]; j++)
		host_w[l->var[LN_GAMMA] + j] = 1.0f;
}

void layer_ln_forward(struct layer *l, const struct layer_ctx *c)
{
	int n = c->rows * positions(l);
	float *mean = c->keep, *rstd = c->keep + n;
	c->be->ln_forward(c->be, l->y, mean, rstd, c->x, c->w[LN_GAMMA], c->w[LN_BETA], n,
			  l->in[2], l->spec.eps);
}

void layer_ln_backward(struct layer *l, const struct layer_ctx *c, const float *dy, float *dx)
{
	int n = c->rows * positions(l);
	const float *mean = c->keep, *rstd = c->keep + n;
	c->be->ln_backward(c->be, dx, c->g[LN_GAMMA], c->g[LN_BETA], dy, c->x, mean, rstd,
			   c->w[LN_GAMMA], n, l->in[2]);
	layer_grads_ready(c, LN_BETA, (size_t)l->in[2]);
}

double layer_ln_flops(const struct layer *l) { return 8.0 * (double)l->in_size; }

/* embedding: a flat row of T token ids (floats holding integers in [0,
 * vocab)) to T vectors, rows of embeddings [vocab, D]: Keras' Embedding,
 * initialised uniformly in [-0.05, 0.05] as Keras does. */
int layer_embed_shape(struct layer *l, int classes, char *why, size_t len)
{
	if (l->in_seq || positions(l) != 1) {
		snprintf(why, len, "takes a flat row of token ids [T], but its input is %dx%dx%d",
			 l->in[0], l->in[1], l->in[2]);
		return -1;
	}
	if (l->vocab < 1) {
		snprintf(why, len, "takes token ids, but the data's rows are pixels or values "
			 "(float or uint8), not tokens");
		return -1;
	}
	l->out[0] = 1;
	l->out[1] = l->in[2];
	l->out[2] = l->spec.units;
	l->seq = 1;
	return 0;
}

/* NAME/embeddings [rows, cols], the one variable of embedding and posembed. */
static void add_embeddings(struct layer *l, struct params *reg, const char *name, long rows,
			   long cols)
{
	long dims[2] = {rows, cols};
	char full[PARAM_NAME_LEN];
	snprintf(full, sizeof(full), "%s/embeddings", name);
	l->var[0] = params_add(reg, full, 2, dims);
	l->n_vars = 1;
}

void layer_embed_vars(struct layer *l, struct params *reg, const char *name, int trainable)
{
	if (trainable)
		add_embeddings(l, reg, name, l->vocab, l->spec.units);
}

void layer_embed_init(const struct layer *l, struct rng *r, float *host_w)
{
	size_t n = (size_t)l->vocab * l->spec.units;
	for (size_t i = 0; i < n; i++)
		host_w[l->var[0] + i] = (2.0f * rng_uniform(r) - 1.0f) * 0.05f;
}

void layer_embed_forward(struct layer *l, const struct layer_ctx *c)
{
	c->be->embed(c->be, l->y, c->x, c->w[0], c->rows * l->out[1], l->out[2], l->vocab);
}

/* The ids have no gradient: dx is never asked for (the model's input).
 * Lent to an unembed, the table's gradient is the sum of the two: the
 * unembed's backward ran first (it is later in the list). */
void layer_embed_backward(struct layer *l, const struct layer_ctx *c, const float *dy,
			  float *dx)
{
	c->be->embed_backward(c->be, c->g[0], dy, c->x, c->rows * l->out[1], l->out[2],
			      l->vocab, l->lends);
	layer_grads_ready(c, 0, (size_t)l->vocab * l->out[2]);
}

double layer_embed_flops(const struct layer *l) { return (double)l->out_size; }

/* unembed: each token's logits against the embedding's table again, y =
 * x E^T ([T, D] to [T, vocab]): tied input and output embeddings (GPT-2's,
 * nanoGPT's, llm.c's; keras_hub's ReversibleEmbedding called with
 * reverse=True). It has no variable of its own (model_plan_tied gives it
 * the embedding's), and never says its gradient is final: the
 * embedding's backward adds its part later and says so. */
int layer_unembed_shape(struct layer *l, int classes, char *why, size_t len)
{
	if (layer_needs_seq(l, why, len))
		return -1;
	l->out[0] = 1;
	l->out[1] = l->in[1];
	l->out[2] = l->vocab;
	return 0;
}

void layer_unembed_forward(struct layer *l, const struct layer_ctx *c)
{
	int rows = c->rows * l->out[1];
	c->be->matmul(c->be, l->y, c->x, c->w[0], rows, l->out[2], l->in[2], 0, 1, 0.0f);
}

void layer_unembed_backward(struct layer *l, const struct layer_ctx *c, const float *dy,
			    float *dx)
{
	int rows = c->rows * l->out[1], d = l->in[2], v = l->out[2];
	c->be->matmul(c->be, c->g[0], dy, c->x, v, d, rows, 1, 0, 0.0f);
	if (dx)
		c->be->matmul(c->be, dx, dy, c->w[0], rows, d, v, 0, 0, 0.0f);
}

double layer_unembed_flops(const struct layer *l)
{
	return 2.0 * l->out[1] * (double)l->in[2] * (double)l->out[2];
}

/* posembed: y = x + embeddings [T, D], a learned vector per position
 * (keras_hub's PositionEmbedding, Glorot-uniform as there). */
int layer_pos_shape(struct layer *l, int classes, char *why, size_t len)
{
	if (layer_needs_seq(l, why, len))
		return -1;
	memcpy(l->out, l->in, sizeof(l->out));
	return 0;
}

void layer_pos_vars(struct layer *l, struct params *reg, const char *name, int trainable)
{
	if (trainable)
		add_embeddings(l, reg, name, l->in[1], l->in[2]);
}

void layer_pos_init(const struct layer *l, struct rng *r, float *host_w)
{
	const long dims[2] = {l->in[1], l->in[2]};
	layer_glorot(l, 0, r, host_w, 2, dims);
}

void layer_pos_forward(struct layer *l, const struct layer_ctx *c)
{
	size_t n = (size_t)c->rows * l->out_size;
	c->be->copy(c->be, l->y, c->x, n * sizeof(float));
	c->be->bias_act(c->be, NULL, l->y, c->w[0], c->rows, (int)l->out_size, ACT_RELU);
}

void layer_pos_backward(struct layer *l, const struct layer_ctx *c, const float *dy, float *dx)
{
	c->be->bias_grad(c->be, c->g[0], dy, c->rows, (int)l->out_size);
	layer_grads_ready(c, 0, l->out_size);
	if (dx && dx != dy) /* the input's gradient is dy itself */
		c->be->copy(c->be, dx, dy, (size_t)c->rows * l->out_size * sizeof(float));
}

double layer_pos_flops(const struct layer *l) { return (double)l->out_size; }

/* tokens: an image [H, W, C] as the sequence [H*W, C] of its pixels (row
 * by row, as channels-last memory already lies: no copy), Keras'
 * Reshape((H*W, C)) after a patch-making strided conv2d. */
int layer_tokens_shape(struct layer *l, int classes, char *why, size_t len)
{
	if (l->in_seq || positions(l) == 1) {
		snprintf(why, len, "makes tokens of an image [H, W, C], but its input is %s "
			 "(give the data's image shape with --input-shape H,W,C)",
			 l->in_seq ? "a sequence already" : "a flat row");
		return -1;
	}
	l->out[0] = 1;
	l->out[1] = positions(l);
	l->out[2] = l->in[2];
	l->seq = 1;
	return 0;
}
