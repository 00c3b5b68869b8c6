/* The layer table's row (struct layer_ops) and the ops of kinds written
 * outside layers.c, for the table there. Private to layers*.c. */
#pragma once
#include "layers.h"

/* One kind of layer: what the table of layers.c holds for it. */
struct layer_ops {
	const char *keras; /* the name its variables take, NULL: none */
	const char *layer; /* Keras' name for a layer of its class, counted per
			    * name as Keras counts them ("max_pooling2d",
			    * "activation"): the summary's; keras's where set */
	int (*shape)(struct layer *l, int classes, char *why, size_t len);
	void (*vars)(struct layer *l, struct params *reg, const char *name, int trainable);
	void (*init)(const struct layer *l, struct rng *r, float *host_w);
	void (*forward)(struct layer *l, const struct layer_ctx *c);
	void (*backward)(struct layer *l, const struct layer_ctx *c, const float *dy, float *dx);
	double (*flops)(const struct layer *l);
	void (*update_state)(struct layer *l, const struct layer_ctx *c);
	int in_place;  /* backward may write dx over dy */
	int alias;     /* its output is its input: no buffer, no forward */
	int fuses_act; /* applies an activation right after it in its own pass */
	int fuses_act_back; /* and its backward (act' in its own backward's
			     * passes), where it alone takes this one's output */
	int no_x_back; /* its backward never reads its input */
	int merge;     /* adds its inputs: the model gives dy to each (no backward) */
	int image;     /* works on {H, W, C} images (conv2d, the pools, tokens): a
			* flat row would be a 1x1 image */
};

/* A layer's ops tell c->ready that its trainable variables' gradients,
 * c->g[0] to the end of c->g[last] (n values), are final. */
static inline void layer_grads_ready(const struct layer_ctx *c, int last, size_t n)
{
	if (c->ready)
		c->ready(c->ready_ctx, c->g[0], (size_t)(c->g[last] - c->g[0]) + n);
}

/* batchnorm (layer_bn.c): over the last axis (channels), Keras' defaults. */
int layer_bn_shape(struct layer *l, int classes, char *why, size_t len);
void layer_bn_vars(struct layer *l, struct params *reg, const char *name, int trainable);
void layer_bn_init(const struct layer *l, struct rng *r, float *host_w);
void layer_bn_forward(struct layer *l, const struct layer_ctx *c);
void layer_bn_backward(struct layer *l, const struct layer_ctx *c, const float *dy, float *dx);
void layer_bn_update_state(struct layer *l, const struct layer_ctx *c);
double layer_bn_flops(const struct layer *l);

/* Glorot-uniform values for variable var (of ndim dims), with Keras'
 * fans: a matrix's rows and columns; a bigger kernel's last two
 * dimensions times the product of the others. */
void layer_glorot(const struct layer *l, int var, struct rng *r, float *host_w, int ndim,
		  const long *dims);

/* The sequence layers (layer_seq.c, layer_attn.c); a sequence of T tokens
 * of width D is the row {1, T, D}. */
/* 0, or -1 with why when l's input is no sequence. */
int layer_needs_seq(const struct layer *l, char *why, size_t len);
int layer_ln_shape(struct layer *l, int classes, char *why, size_t len);
void layer_ln_vars(struct layer *l, struct params *reg, const char *name, int trainable);
void layer_ln_init(const struct layer *l, struct rng *r, float *host_w);
void layer_ln_forward(struct layer *l, const struct layer_ctx *c);
void layer_ln_backward(struct layer *l, const struct layer_ctx *c, const float *dy, float *dx);
double layer_ln_flops(const struct layer *l);
int layer_attn_shape(struct layer *l, int classes, char *why, size_t len);
void layer_attn_vars(struct layer *l, struct params *reg, const char *name, int trainable);
void layer_attn_init(const struct layer *l, struct rng *r, float *host_w);
void layer_attn_forward(struct layer *l, const struct layer_ctx *c);
/* Causal attention's forward for token t of one row alone (c->rows 1),
 * the queries, keys and values of tokens 0..t-1 already in c->keep from
 * the calls for them (the cache): y's token t, in O(t D + D^2). */
void layer_attn_forward_at(struct layer *l, const struct layer_ctx *c, int t);
void layer_attn_backward(struct layer *l, const struct layer_ctx *c, const float *dy, float *dx);
double layer_attn_flops(const struct layer *l);
int layer_embed_shape(struct layer *l, int classes, char *why, size_t len);
void layer_embed_vars(struct layer *l, struct params *reg, const char *name, int trainable);
void layer_embed_init(const struct layer *l, struct rng *r, float *host_w);
void layer_embed_forward(struct layer *l, const struct layer_ctx *c);
void layer_embed_backward(struct layer *l, const struct layer_ctx *c, const float *dy,
			  float *dx);
double layer_embed_flops(const struct layer *l);
int layer_unembed_shape(struct layer *l, int classes, char *why, size_t len);
void layer_unembed_forward(struct layer *l, const struct layer_ctx *c);
void layer_unembed_backward(struct layer *l, const struct layer_ctx *c, const float *dy,
			    float *dx);
double layer_unembed_flops(const struct layer *l);
int layer_pos_shape(struct layer *l, int classes, char *why, size_t len);
void layer_pos_vars(struct layer *l, struct params *reg, const char *name, int trainable);
void layer_pos_init(const struct layer *l, struct rng *r, float *host_w);
void layer_pos_forward(struct layer *l, const struct layer_ctx *c);
void layer_pos_backward(struct layer *l, const struct layer_ctx *c, const float *dy, float *dx);
double layer_pos_flops(const struct layer *l);
int layer_tokens_shape(struct layer *l, int classes, char *why, size_t len);
