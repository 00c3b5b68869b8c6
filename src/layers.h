/* The layer table: each kind of layer (layer_spec.h's LAYER_KINDS) is one
 * entry of struct layer_ops in layers.c: its output shape, its variables
 * (Keras names, shapes, initialiser), forward, backward and FLOPs. The
 * model (model.c), the registry, checkpoints, EMA, inspect and the
 * benchmark's FLOP count all follow it. Shapes are per row, channels-last:
 * {H, W, C}; a flat row of D values is {1, 1, D}. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "layer_spec.h"
#include "mathfn.h"
#include "params.h"

struct model;
struct rng;

/* One layer of a model. */
struct layer {
	struct layer_spec spec;
	int in[3], out[3];        /* {H, W, C} of one row in and out */
	size_t in_size, out_size; /* floats per row: H * W * C */
	int n_vars;               /* 0; 2 (kernel and bias; gamma and beta); 4
				   * (batchnorm's, then moving mean and variance) */
	size_t var[4];            /* their offsets in the flat buffers */
	int fused;                /* an activation the layer before applies */
	int needs_dx;             /* a layer before it has variables */
	float *y;                 /* (R, out_size) its output; the input's for flatten */
	struct window win;        /* conv2d's and the pools' window over the input */
	size_t cols_size;         /* conv2d: im2col floats per row (the model's
				   * shared m->cols holds the largest) */
	size_t aux_size;          /* floats of the layer's own (batchnorm: 5C) */
	float *aux;               /* (aux_size) batchnorm: the batch's mean and
				   * variance (C each), backward sums (2C), scratch (C) */
	int aux_rows;             /* batchnorm: the rows of the batch in aux */
};

/* Fills l's output shape from l->in; 0, or -1 with why (e.g. "dense needs
 * ..."). classes is C, for a dense without units. */
int layer_shape(struct layer *l, int classes, char *why, size_t len);
/* The Keras layer name counter l's variables are named after ("dense",
 * "conv2d", "batch_normalization"), or NULL when it has none. */
const char *layer_keras_name(const struct layer *l);
/* Registers l's trainable variables (trainable set) or its non-trainable
 * ones under name ("dense_1/kernel", "batch_normalization/moving_mean"). */
void layer_add_vars(struct layer *l, struct params *reg, const char *name, int trainable);
/* Its initial values into host_w (Glorot-uniform kernels from r, zero
 * biases; batchnorm's gamma and moving variance 1, beta and moving mean
 * 0). */
void layer_init(const struct layer *l, struct rng *r, float *host_w);
/* Whether l writes its own output buffer (not flatten's alias, and not an
 * activation fused into the layer before). */
int layer_owns_output(const struct layer *l);
/* y = layer(x) for rows rows; train: training mode (dropout on). */
void layer_forward(struct model *m, struct layer *l, const float *x, int rows, int train);
/* Gradients of l's variables into m->g, and dx = d loss / d x unless dx is
 * NULL; dy is d loss / d y. dx may be dy (in place) for element-wise
 * kinds. */
void layer_backward(struct model *m, struct layer *l, const float *x, const float *dy, float *dx,
		    int rows);
/* After a step that was taken (not skipped): l's non-trainable variables
 * follow the batch it trained on (batchnorm's moving statistics). */
void layer_update_state(struct model *m, struct layer *l);
/* Whether the kind can write dx over dy. */
int layer_in_place(const struct layer *l);
/* Forward FLOPs for one row (multiply-adds count 2). */
double layer_flops(const struct layer *l);
/* Whether the variable called name is a non-trainable one by its canonical
 * name ("batch_normalization/moving_mean"): it has no EMA shadow and no
 * optimizer slots. */
int layer_var_is_state(const char *name);
