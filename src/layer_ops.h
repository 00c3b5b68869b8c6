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
	int image;     /* works on {H, W, C} windows (conv2d, the pools): a flat
			* row would be a 1x1 image */
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
