/* The model: a stack of dense layers (hidden activation, linear output) with
 * softmax cross-entropy, written once against the backend interface. Its
 * variables live in one flat buffer described by the parameter registry.
 *
 * Letters: R rows in a batch (at most max_rows), D input width, C classes,
 * O_l width of layer l, P parameter count. */
#pragma once
#include <stdint.h>

#include "backend.h"
#include "config.h"
#include "params.h"

#define MODEL_MAX_LAYERS (MAX_HIDDEN + 1)

struct dense {
	int in, out;          /* fan_in, fan_out, e.g. 784, 256 */
	size_t kernel, bias;  /* offsets of (in,out) and (out) in the flat buffers */
};

struct model {
	const struct backend *be;
	struct params reg;     /* names, shapes, offsets */
	int n_layers;          /* hidden layers + the output layer */
	struct dense layer[MODEL_MAX_LAYERS];
	enum act_kind act;
	int in_dim, classes;   /* D, C, e.g. 784, 10 */
	int max_rows;          /* R at most, e.g. 1000 */
	int max_width;         /* widest layer input or output */

	/* Backend memory, all allocated by model_init. */
	float *w;                        /* (P) variables */
	float *g;                        /* (P) gradients */
	float *x;                        /* (R, D) input batch */
	int32_t *y;                      /* (R) labels */
	float *z[MODEL_MAX_LAYERS];      /* (R, O_l) pre-activations; z[L-1] logits */
	float *a[MODEL_MAX_LAYERS];      /* (R, O_l) activations of hidden layers */
	float *dlogits;                  /* (R, C) */
	float *scratch[2];               /* (R, max_width) backward ping-pong */
	float *stats;                    /* (2) loss sum, correct count, accumulated */
};

/* Builds the registry (dense/kernel [D,O0], dense/bias [O0], dense_1/...) and
 * allocates every buffer for batches of up to max_rows. */
void model_init(struct model *m, const struct backend *be, int in_dim,
		int classes, const int *hidden, int n_hidden, enum act_kind act,
		int max_rows);
void model_free(struct model *m);
/* Glorot-uniform kernels and zero biases from seed, into host (P). */
void model_glorot(const struct model *m, uint64_t seed, float *host_w);
/* The bytes model_init would allocate for this model and max_rows (known
 * before allocating), and in *params its P. */
double model_bytes(int in_dim, int classes, const int *hidden, int n_hidden, int max_rows,
		   size_t *params);
/* Forward plus backward FLOPs for one row (the first layer computes no
 * gradient for its input). */
double model_flops_per_row(const struct model *m);
/* Loads rows of inputs (R,D) and labels (R) from host memory. */
void model_set_batch(struct model *m, const float *x, const int32_t *y, int rows);
/* The same from the backend's alloc_host memory, without waiting: x and y
 * must stay unchanged until the backend has done this step's ops. */
void model_set_batch_async(struct model *m, const float *x, const int32_t *y, int rows);
/* Forward pass and loss over the loaded rows, adding {loss sum, correct}
 * to the model's stats. With grad_scale > 0 also leaves dlogits =
 * grad_scale * d(loss sum)/d(logits) for model_backward. Does not wait for
 * the backend. */
void model_forward(struct model *m, int rows, float grad_scale);
/* Host out[2] = the stats summed since the last call (loss sum, correct
 * count); resets them. Waits for the backend. */
void model_take_stats(struct model *m, float out[2]);
/* Called by model_backward with each layer's gradients (kernel and bias,
 * adjacent in g) as soon as they are final, last layer first. */
typedef void (*grad_ready_fn)(void *ctx, float *g, size_t n);
/* Backward pass: every gradient written into its slot of g (overwritten);
 * ready (may be NULL) hears of each layer's as it completes. */
void model_backward(struct model *m, int rows, grad_ready_fn ready, void *ctx);
