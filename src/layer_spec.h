/* The model description users give (--model, or `model = ...` in a
 * --config file): comma-separated layers, each a kind's word and its
 * colon-separated arguments, with Keras' names and defaults: the rows of
 * LAYER_KINDS below, then each activation of kinds.h's ACT_KINDS by its
 * name (relu, gelu, ...), which takes no arguments. Residual blocks:
 * [MAIN] is x + MAIN(x), [MAIN|SHORTCUT] is MAIN(x) + SHORTCUT(x) (the
 * add is a layer of its own, after the main path's layers and then the
 * shortcut's, as Keras numbers a functional model written in that
 * order); N*(...) (or N*[...]) repeats; whitespace is ignored.
 *
 * e.g. "conv2d:32:3,batchnorm,relu,maxpool2d:2,flatten,dense:128,relu,
 * dropout:0.3,dense", or "conv2d:16:3,batchnorm,relu,3*([conv2d:16:3,
 * batchnorm,relu,conv2d:16:3,batchnorm],relu),globalavgpool,dense".
 * --layers 256,256 is the shorthand for "dense:256,relu,dense:256,relu,
 * dense" (with --activation's word). */
#pragma once
#include <stddef.h>

#include "kinds.h"

#define LAYER_SPEC_MAX 512
#define LAYER_REPEAT_MAX 1000
#define LAYER_UNITS_MAX 65536
#define LAYER_HEADS_MAX 1024

/* X(id, name, arguments at least, at most, usage for error lines), each
 * row's defaults beside it. The activations follow as kinds of their own,
 * one per row of ACT_KINDS: LAYER_ACT + ACT_GELU is gelu's layer. */
#define LAYER_KINDS(X)                                                         \
	/* no UNITS: the number of classes (the last layer) */                \
	X(LAYER_DENSE, "dense", 0, 1, "dense[:UNITS]")                         \
	/* stride 1, same */                                                   \
	X(LAYER_CONV2D, "conv2d", 2, 4, "conv2d:FILTERS:KERNEL[:STRIDE[:same|valid]]") \
	/* stride = size */                                                    \
	X(LAYER_MAXPOOL2D, "maxpool2d", 1, 2, "maxpool2d:SIZE[:STRIDE]")       \
	X(LAYER_AVGPOOL2D, "avgpool2d", 1, 2, "avgpool2d:SIZE[:STRIDE]")       \
	X(LAYER_GLOBALAVGPOOL, "globalavgpool", 0, 0, "globalavgpool")         \
	X(LAYER_FLATTEN, "flatten", 0, 0, "flatten")                           \
	/* 0 <= RATE < 1 */                                                    \
	X(LAYER_DROPOUT, "dropout", 1, 1, "dropout:RATE")                      \
	X(LAYER_BATCHNORM, "batchnorm", 0, 0, "batchnorm")                    \
	/* epsilon 1e-3 (Keras'; PyTorch, nanoGPT and llm.c use 1e-5) */      \
	X(LAYER_LAYERNORM, "layernorm", 0, 1, "layernorm[:EPSILON]")           \
	/* self-attention over a sequence's tokens, key_dim = width / HEADS */ \
	X(LAYER_ATTENTION, "attention", 1, 3, "attention:HEADS[:causal][:DROPOUT]") \
	/* token ids (the data's vocabulary) to vectors of DIM */             \
	X(LAYER_EMBEDDING, "embedding", 1, 1, "embedding:DIM")                 \
	/* logits against the embedding's table again (tied): x E^T */         \
	X(LAYER_UNEMBED, "unembed", 0, 0, "unembed")                           \
	/* a learned vector added at each position (keras_hub's) */           \
	X(LAYER_POSEMBED, "posembed", 0, 0, "posembed")                        \
	/* an image's pixels as a sequence of tokens [H*W, C] (Reshape) */     \
	X(LAYER_TOKENS, "tokens", 0, 0, "tokens")                              \
	/* written as a block: [MAIN] or [MAIN|SHORTCUT] */                   \
	X(LAYER_ADD, "add", 0, 0, "a block, [MAIN] or [MAIN|SHORTCUT]")

#define LAYER_ID(id, ...) id,
enum layer_kind {
	LAYER_KINDS(LAYER_ID)
	LAYER_ACT, /* the first activation's: LAYER_ACT + act for each act_kind */
	LAYER_KIND_COUNT = LAYER_ACT + ACT_COUNT
};
#undef LAYER_ID

/* The layer kind of activation act. */
#define LAYER_OF_ACT(act) ((enum layer_kind)(LAYER_ACT + (int)(act)))

/* Each kind's word in enum order, the activations' last, NULL-terminated. */
extern const char *const layer_names[];

/* One layer as described: its kind and arguments (0 where the kind has
 * none or the description left it to the default). */
struct layer_spec {
	enum layer_kind kind;
	int units;   /* dense: output width, 0 for the classes; conv2d: filters;
		      * attention: heads; embedding: width; add: the layers of
		      * its block's main path */
	int size;    /* conv2d: kernel height = width; pools: window; add: the
		      * layers of its block's shortcut (0: the identity) */
	int stride;  /* conv2d: 1 by default; pools: size by default */
	int same;    /* conv2d: 1 for 'same' padding (default), 0 for 'valid' */
	float rate;  /* dropout, attention: fraction of units (attention:
		      * probabilities) zeroed while training */
	float eps;   /* layernorm: added to the variance, default 1e-3 */
	int causal;  /* attention: a token attends to those before it only */
	int from[2]; /* the layers whose outputs it takes, as distances back
		      * from it: 1 (or 0) the layer before; distance i + 1 from
		      * layer i is the model's input. LAYER_ADD: {the main path's
		      * last layer, the shortcut's last layer or the block's
		      * input}; from[1] is 0 for the other kinds */
	int at;      /* where it was written: 1-based character of the
		      * description (for an add, its block's '['); 0: not parsed */
};

/* The index of the layer that layer i of spec takes as input k (0, or 1 for
 * an add's second), -1 for the model's input. */
int layer_spec_src(const struct layer_spec *spec, int i, int k);

/* Parses desc into spec[0..*n): 0, or -1 with a user_error naming the
 * option (what, e.g. "--model"), the place (the layer's position, 1-based,
 * and text, or the character of a bracket) and what was expected. */
int layer_spec_parse(const char *desc, const char *what, struct layer_spec *spec, int max,
		     int *n);
/* The MLP of --layers: dense:W,ACT for each width, then dense. */
int layer_spec_mlp(const int *hidden, int n_hidden, enum act_kind act, struct layer_spec *spec,
		   int max);
/* The canonical text of spec[0..n) (defaults written out, blocks written
 * out once per repetition), e.g. "conv2d:32:3:1:same,relu,[dense:8,relu],
 * dense"; returns buf. */
const char *layer_spec_text(const struct layer_spec *spec, int n, char *buf, size_t len);
/* The activation kind a layer applies (ACT_RELU, ...), or -1 when it is
 * not an activation layer. */
int layer_spec_act(const struct layer_spec *s);
