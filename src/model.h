/* The model: a graph of layers (layers.h, one table entry per kind), listed
 * in the order they were written, each taking the output of an earlier one
 * (the one before it, unless a block's add or shortcut says otherwise:
 * layer_spec.h), ending in softmax cross-entropy, written once against the
 * backend interface. One walk serves every caller: forward in list order,
 * backward in reverse, a layer's gradient given to each layer it takes
 * input from (summed where several take the same one). Activations and
 * their gradients live in one arena planned at start-up: a buffer's place
 * is reused once no later step of the walk (forward or backward) reads it.
 * Its variables live in one flat buffer described by the parameter
 * registry.
 *
 * Letters: R rows in a batch (at most max_rows), D input values per row
 * (H * W * C), C classes, P variables' values, T of them trainable (the
 * first T: params.h). */
#pragma once
#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "config.h"
#include "layers.h"
#include "params.h"

#define MODEL_MAX_LAYERS LAYER_SPEC_MAX
#define MODEL_NO_BUFFER ((size_t)-1)

struct model {
	const struct backend *be;
	struct params reg;     /* names, shapes, offsets */
	int n_layers;
	struct layer layer[MODEL_MAX_LAYERS];
	int in[3];             /* {H, W, C} of one input row, e.g. {1, 1, 784} */
	int in_dim, classes;   /* D, C, e.g. 784, 10 */
	int max_rows;          /* R at most, e.g. 1000 */
	size_t max_width;      /* widest layer input or output, per row */
	size_t y_at[MODEL_MAX_LAYERS], dy_at[MODEL_MAX_LAYERS]; /* each layer's output
				* and its gradient: floats per row into the arena,
				* MODEL_NO_BUFFER: none (an alias, or no gradient) */
	size_t arena_per_row;  /* the arena's floats per row of a training call */
	size_t unplanned_per_row; /* what the same buffers would take apart */
	size_t keep_at[MODEL_MAX_LAYERS], keep_eval_at[MODEL_MAX_LAYERS]; /* what each
				* layer's forward keeps for its backward (training),
				* or uses (evaluating), MODEL_NO_BUFFER: none */
	size_t work_at[MODEL_MAX_LAYERS]; /* each layer's backward scratch */
	size_t keep_per_row;   /* floats all layers keep (attention's scores
				* among them), per row, before the plan shares */
	int vocab;             /* the token ids' range of data of tokens, else 0 */
	int targets;           /* labels a row: 1, or T where a model of tokens
				* ends on a sequence of T tokens (C values each:
				* every token's next one is predicted) */
	size_t y_eval_at[MODEL_MAX_LAYERS]; /* each layer's output when evaluating
				* (forward only: nothing kept for a backward) */
	size_t eval_per_row;   /* the arena's floats per row of an evaluation */
	int train_rows;        /* rows a training call takes at most, set before
				* model_alloc (the arena holds that many of a
				* training call's and max_rows of an evaluation's);
				* 0: max_rows */
	int layout;            /* whose places the layers' y point to: 1
				* training's, 0 evaluation's */
	uint64_t seed;         /* dropout masks' */
	long step, row0;       /* the batch's global step and first row in the
				* global batch (dropout masks) */
	sum_fn sum;            /* batchnorm's global statistics, NULL: each
				* rank's own (model_sync_bn) */
	void *sum_ctx;
	long global_rows;      /* rows of the global batch, e.g. 128 */

	size_t room;           /* values w and g are allocated with, if over P:
				* ZeRO-1's collectives on NCCL see ranks * each
				* (params.h); set before model_alloc, else 0 */

	/* Backend memory, allocated by model_alloc. */
	float *w;              /* (P, or room if more) variables */
	float *g;              /* (P, or room if more) gradients; past T
				* stays 0 */
	float *x;              /* (R, D) input batch: x_buf, or where the
				* batch lies (model_set_batch_async) */
	int32_t *y;            /* (R, targets) labels: y_buf, or where they lie */
	float *x_buf;          /* (R, D) the model's own */
	int32_t *y_buf;        /* (R, targets) */
	float *arena;          /* outputs and gradients: (train_rows,
				* arena_per_row) or (R, eval_per_row), the more */
	float *dlogits;        /* (R, C) the last layer's dy, in the arena */
	float *acc;            /* (R, max_width) a gradient to be added to one
				* already given (model_layer_backward) */
	size_t max_cols;       /* the largest conv2d's im2col floats per row */
	float *cols;           /* (R, max_cols) conv2d's windows, forward and backward */
	float *stats;          /* (2) loss sum, correct count, accumulated */
};

/* The layers cfg asks for: --model's, or the MLP of --layers and
 * --activation. 0, or -1 with a user_error. */
int model_specs(const struct config *cfg, struct layer_spec *spec, int *n);
/* The shape in ({H, W, C}) of one input row of the data file path, whose
 * rows have shape data ({H, W, C} of [N, H, W, C] images, {1, 1, D} of flat
 * [N, D] rows): --input-shape's for flat rows, else the data's. 0, or -1
 * with a user_error when --input-shape is malformed, its H*W*C is not D, or
 * it differs from the images' shape (naming both and path). */
int model_input_shape(const struct config *cfg, const char *path, const int data[3],
		      int in[3]);
/* Whether spec[0..n) suits the data's rows, of shape data ({1, 1, D}:
 * flat), as cfg's --input-shape gives them: a layer that works on images
 * (conv2d, the pools) on flat rows without --input-shape is a user_error
 * suggesting it (each row would be a 1x1 image). 0, or -1. */
int model_check_images(const struct config *cfg, const struct layer_spec *spec, int n,
		       const int data[3]);
/* Lays the model out for input rows of shape in ({H, W, C}) and C classes:
 * every layer's inputs and shapes, the registry (Keras names: dense/kernel
 * [D,O0], dense/bias [O0], dense_1/...), the walk's gradients and the
 * arena's plan, without allocating. 0, or -1 with a user_error naming the
 * layer that cannot take its input (or the block whose add's inputs
 * differ in shape). */
int model_plan(struct model *m, const struct layer_spec *spec, int n, const int in[3],
	       int classes, uint64_t seed);
/* Whether m's labels a row (targets) are the data's (labels: 1, or a file
 * of tokens' window), the data file path. 0, or -1 with a user_error. */
int model_check_targets(const struct model *m, int labels, const char *path);
/* model_plan for input rows of token ids in [0, vocab) (vocab 0: rows of
 * values, as model_plan): an embedding layer takes them. */
int model_plan_vocab(struct model *m, const struct layer_spec *spec, int n, const int in[3],
		     int classes, int vocab, uint64_t seed);
/* model_plan and model_alloc of the MLP in_dim -> hidden (act) -> classes,
 * for tests and tools; aborts if it cannot be laid out. */
void model_init(struct model *m, const struct backend *be, int in_dim, int classes,
		const int *hidden, int n_hidden, enum act_kind act, int max_rows);
/* The bytes of the activation arena for calls of up to max_rows rows (and
 * train_rows of training's). */
double model_arena_bytes(const struct model *m, int max_rows);
/* The bytes model_alloc will take for batches of up to max_rows. */
double model_bytes(const struct model *m, int max_rows);
/* Allocates every buffer for batches of up to max_rows. */
void model_alloc(struct model *m, const struct backend *be, int max_rows);
void model_free(struct model *m);
/* Initial values (Glorot-uniform kernels, zero biases) from seed, into host
 * (P). */
void model_glorot(const struct model *m, uint64_t seed, float *host_w);
/* Forward plus backward FLOPs for one row (the first layer with variables
 * computes no gradient for its input). */
double model_flops_per_row(const struct model *m);
/* (model_summary.c) The text of the model for the start line: "784-256-256-10 relu" for an
 * MLP of --layers, the canonical --model for a chain of layers, and a
 * model with blocks as written (its repetitions short), blanks left out. */
void model_text(const struct model *m, const struct config *cfg, char *buf, size_t len);
/* names[i] = layer i's Keras name, each class counted in list order as
 * Keras counts a functional model's layers ("conv2d_9", "activation_6",
 * "add_3"); its variables are named after it ("conv2d_9/kernel"). */
void model_layer_names(const struct model *m, char (*names)[PARAM_NAME_LEN]);
/* (model_summary.c) The model as Keras' model.summary() shows one, to f:
 * each layer's Keras name (indented under its block), its text, output
 * shape, parameters and, where it is not the layer above, what it takes;
 * then the totals and the activation arena a row. */
void model_summary(const struct model *m, FILE *f);
/* Loads rows of inputs (R,D) and labels (R, targets) from host memory. */
void model_set_batch(struct model *m, const float *x, const int32_t *y, int rows);
/* The same from the backend's alloc_host memory, without waiting: x and y
 * must stay unchanged until the backend has done this step's ops. A host
 * backend's model reads them where they lie, uncopied, until the next
 * model_set_batch*: they must stay until then. */
void model_set_batch_async(struct model *m, const float *x, const int32_t *y, int rows);
/* --sync-bn: batchnorm layers normalise with the statistics of the global
 * batch of global_rows rows, summed over ranks by sum (every training step's
 * global batch has exactly that many rows: the loader drops an epoch's
 * remainder). */
void model_sync_bn(struct model *m, sum_fn sum, void *ctx, long global_rows);
/* After a step that was taken: the non-trainable variables follow the
 * batch it trained on (batchnorm's moving statistics). */
void model_update_state(struct model *m);
/* What layer i's forward and backward take for a call over rows rows
 * (its input, output and variables' places, wherever the layers' y and
 * keep point now): for callers that run a layer in another way
 * (generate.c's token at a time, in places of its own). */
struct layer_ctx model_layer_ctx(const struct model *m, int i, int rows, int training);
/* Where the loaded rows are: the global step being trained and their first
 * row in the global batch (the dropout masks' key). */
void model_set_position(struct model *m, long step, long row0);
/* Forward pass and loss over the loaded rows, adding {loss sum, correct}
 * over their R * targets labels to the model's stats. training: dropout on, batchnorm on the batch's
 * statistics, and dlogits = grad_scale * d(loss sum)/d(logits) left for
 * model_backward; else evaluation (grad_scale unused). Does not wait for
 * the backend. */
void model_forward(struct model *m, int rows, int training, float grad_scale);
/* Host out[2] = the stats summed since the last call (loss sum, correct
 * count); resets them. Waits for the backend. */
void model_take_stats(struct model *m, float out[2]);
/* Backward pass: every gradient written into its slot of g (overwritten);
 * ready (may be NULL) hears of each layer's (its variables, adjacent in g)
 * as soon as they are final, last layer first. */
void model_backward(struct model *m, int rows, grad_ready_fn ready, void *ctx);
/* Layer i's forward over the loaded rows (model_forward's step i). */
void model_layer_forward(struct model *m, int i, int rows, int training);
/* Layer i's backward (model_backward's step i, after those of the layers
 * after it): from its dy, its variables' gradients (ready, which may be
 * NULL, hears of them) and its inputs' (written, or added to what they
 * hold); nothing when no layer it takes input from has variables. */
void model_layer_backward(struct model *m, int i, int rows, grad_ready_fn ready, void *ctx);
