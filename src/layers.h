/* The layer table: each kind of layer (layer_spec.h's LAYER_KINDS, then
 * one per activation) is one entry of struct layer_ops in layers.c: its
 * output shape, its variables (Keras names, shapes, initialiser), forward,
 * backward, FLOPs, and the columns the model wires layers by (whether it
 * fuses the activation after it, aliases its input, works in place). The
 * model (model.c), the registry, checkpoints, EMA, inspect and the
 * benchmark's FLOP count all follow it. Shapes are per row, channels-last:
 * {H, W, C}; a flat row of D values is {1, 1, D}. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "layer_spec.h"
#include "mathfn.h"
#include "params.h"

struct backend;
struct rng;

/* Hears that the gradients g[0, n) (backend memory) are final: a layer's
 * variables', adjacent in the model's g. */
typedef void (*grad_ready_fn)(void *ctx, float *g, size_t n);
/* Sums buf (n, backend memory) over every rank, in place, before it
 * returns (--sync-bn's statistics). */
typedef void (*sum_fn)(void *ctx, float *buf, size_t n);

/* Most variables a layer has: attention's query, key, value and output
 * kernels and biases. */
#define LAYER_VARS_MAX 8

/* One layer of a model. */
struct layer {
	struct layer_spec spec;
	int in[3], out[3];        /* {H, W, C} of one row in and out; a sequence of
				   * T tokens of width D is {1, T, D} */
	int in_seq, seq;          /* its input, its output is a sequence of tokens:
				   * per-token layers (dense, layernorm) act on the
				   * last axis of each of its in[1] tokens */
	int vocab;                /* embedding, unembed: the token ids' range, the data's */
	int borrows;              /* unembed: its one variable, var[0], is the
				   * embedding's table (it registers none) */
	int lends;                /* embedding: an unembed takes its table too, so
				   * its backward adds to the gradient that one gave */
	size_t in_size, out_size; /* floats per row: H * W * C */
	int n_vars;               /* 0; 2 (kernel and bias; gamma and beta); 4
				   * (batchnorm's, then moving mean and variance);
				   * 8 (attention's query, key, value, output) */
	size_t var[LAYER_VARS_MAX]; /* their offsets in the flat buffers */
	int act;                  /* the activation (enum act_kind) this layer
				   * applies in its own pass, for the layer after
				   * it (layer_fuses), or -1 */
	int fused;                /* an activation the layer before applies */
	int act_back;             /* it applies act's backward too (it alone takes
				   * this layer's output): its dy is the gradient of
				   * act(y), and it reads its own y */
	int fused_back;           /* an activation whose backward the layer before
				   * applies: its own does nothing */
	int drops_y;              /* act_back with relu: its y is never kept, the
				   * activation's output stands for it (relu's
				   * backward needs act(y) > 0 only, which is y > 0) */
	int src[2];               /* the layers whose outputs it takes (-1: the
				   * model's input); src[1]: an add's second, else -1 */
	int n_src;                /* 1, or 2 for an add */
	int needs_dx[2];          /* its backward gives the gradient of input k: a
				   * layer on that path has variables */
	int accumulate[2];        /* that gradient adds to what a later layer gave
				   * (the input feeds several layers) */
	int backward;             /* its backward runs: it or a layer it takes
				   * input from (at any distance) has variables */
	float *y;                 /* (R, out_size) its output; the input's for an
				   * alias kind (layer_is_alias: flatten) */
	float *dy;                /* (R, out_size) the gradient of its output,
				   * when backward is set (the model's plan may
				   * give layers one buffer where that is safe) */
	struct window win;        /* conv2d's and the pools' window over the input */
	size_t cols_size;         /* conv2d: im2col floats per row (the model's
				   * shared cols holds the largest) */
	size_t aux_size;          /* floats of the layer's own (batchnorm: 5C) */
	float *aux;               /* (aux_size) batchnorm: the batch's mean and
				   * variance (C each), backward sums (2C), scratch (C) */
	int aux_rows;             /* batchnorm: the rows of the batch in aux */
	size_t keep_size;         /* floats per row its forward keeps for its
				   * backward (attention's queries, keys, values,
				   * probabilities and context; layernorm's mean and
				   * rstd), planned in the arena */
	size_t work_size;         /* floats per row of scratch within one forward or
				   * backward call (attention's gradients), planned */
	float *keep;              /* (R, keep_size) in the arena, or NULL */
};

/* What a layer's forward, backward and state update may touch besides the
 * layer itself (its shapes, output y and own aux), as the model gives it
 * for one call. R: rows of this batch. */
struct layer_ctx {
	const struct backend *be;
	int rows;                 /* R, e.g. 128 */
	int training;             /* 1: dropout on, batchnorm on the batch's
				   * statistics; 0: evaluating */
	const float *x;           /* (R, in_size) its input */
	const float *x2;          /* (R, in_size) an add's second input, else NULL */
	float *act_y;             /* (R, out_size) where the activation it applies
				   * (layer.act) writes: the next layer's y; else NULL */
	float *w[LAYER_VARS_MAX]; /* its variables in the model's w, layer.var's
				   * order: e.g. dense kernel (in_size, out_size), bias
				   * (out_size) */
	float *g[LAYER_VARS_MAX]; /* their gradients' places in the model's g */
	float *keep;              /* (R, layer.keep_size) what its forward keeps for its
				   * backward, or NULL */
	float *work;              /* (R, layer.work_size) its backward's scratch, or NULL */
	float *cols;              /* (R, the model's largest cols_size) conv2d's
				   * im2col buffer, shared by every layer */
	uint64_t seed;            /* dropout's masks: the layer's own seed */
	long step, row0;          /* the global step and the batch's first row in
				   * the global batch */
	sum_fn sum;               /* batchnorm: sums over ranks (--sync-bn), or
				   * NULL: this rank's own statistics */
	void *sum_ctx;
	long global_rows;         /* rows of the global batch under sum */
	grad_ready_fn ready;      /* told once its gradients are final, or NULL */
	void *ready_ctx;
};

/* Fills l's output shape from l->in; 0, or -1 with why (e.g. "dense needs
 * ..."). classes is C, for a dense without units. */
int layer_shape(struct layer *l, int classes, char *why, size_t len);
/* The Keras layer name counter l's variables are named after ("dense",
 * "conv2d", "batch_normalization"), or NULL when it has none. */
const char *layer_keras_name(const struct layer *l);
/* Keras' name for l's layer, counted per name ("conv2d", "activation",
 * "add", "max_pooling2d"; the variables' name where it has variables). */
const char *layer_class_name(const struct layer *l);
/* Registers l's trainable variables (trainable set) or its non-trainable
 * ones under name ("dense_1/kernel", "batch_normalization/moving_mean"). */
void layer_add_vars(struct layer *l, struct params *reg, const char *name, int trainable);
/* Its initial values into host_w (Glorot-uniform kernels from r, zero
 * biases; batchnorm's gamma and moving variance 1, beta and moving mean
 * 0). */
void layer_init(const struct layer *l, struct rng *r, float *host_w);
/* Whether l's kind applies the activation of the layer after it, next, in
 * its own pass (the table's fuses_act column: dense and conv2d add their
 * bias and apply it in one bias_act), leaving next's forward nothing to do. */
int layer_fuses(const struct layer *l, const struct layer *next);
/* Whether l's kind applies its fused activation's backward too (the
 * table's fuses_act_back column: batchnorm). */
int layer_fuses_back(const struct layer *l);
/* Whether l's output is its input itself (the table's alias column:
 * flatten): it has no buffer of its own and its forward does nothing. */
int layer_is_alias(const struct layer *l);
/* l->y (c->rows rows) = layer(c->x); with l->act >= 0 also c->act_y =
 * act(l->y). */
void layer_forward(struct layer *l, const struct layer_ctx *c);
/* (layers_token.c) Whether l can run a token at a time
 * (layer_forward_token): causal attention, and the kinds that act on each
 * token alone on a sequence. 0, or -1 with why ("is not causal: ..."). */
int layer_token_ok(const struct layer *l, char *why, size_t len);
/* l's forward for token t of one row (c for a call of 1 row, evaluating),
 * the tokens before t already run through it: its output's token t. */
void layer_forward_token(struct layer *l, const struct layer_ctx *c, int t);
/* Gradients of l's variables into c->g (then c->ready hears of them), and
 * dx = d loss / d x unless dx is NULL; dy is d loss / d y. dx may be dy (in
 * place) for the kinds of layer_in_place. */
void layer_backward(struct layer *l, const struct layer_ctx *c, const float *dy, float *dx);
/* After a step that was taken (not skipped): l's non-trainable variables
 * in c->w follow the batch it trained on (batchnorm's moving statistics). */
void layer_update_state(struct layer *l, const struct layer_ctx *c);
/* Whether the kind can write dx over dy. */
int layer_in_place(const struct layer *l);
/* Whether its backward reads its input (c->x): the input must be kept
 * until then. */
int layer_reads_x_back(const struct layer *l);
/* Whether the kind merges inputs (add): its backward gives dy itself to
 * each input, which the model does (layer_backward is not called). */
int layer_is_merge(const struct layer *l);
/* Whether a layer of kind works on images (the table's image column:
 * conv2d, the pools): on a flat row {1, 1, D} it sees a 1x1 image. */
int layer_kind_image(enum layer_kind kind);
/* conv2d: the rows (images) one im2col and product take on backend be, of
 * a call over rows: as many as be->cols_budget holds, at least one. */
int layer_cols_rows(const struct layer *l, const struct backend *be, int rows);
/* Forward FLOPs for one row (multiply-adds count 2). */
double layer_flops(const struct layer *l);
/* Whether the variable called name is a non-trainable one by its canonical
 * name ("batch_normalization/moving_mean"): it has no EMA shadow and no
 * optimizer slots. */
int layer_var_is_state(const char *name);
