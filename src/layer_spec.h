/* The model description users give (--model, or `model = ...` in a
 * --config file): comma-separated layers, each a kind's word and its
 * colon-separated arguments, with Keras' names and defaults: the rows of
 * LAYER_KINDS below, then each activation of kinds.h's ACT_KINDS by its
 * name (relu, gelu, ...), which takes no arguments.
 *
 * e.g. "conv2d:32:3,batchnorm,relu,maxpool2d:2,flatten,dense:128,relu,
 * dropout:0.3,dense". --layers 256,256 is the shorthand for
 * "dense:256,relu,dense:256,relu,dense" (with --activation's word). */
#pragma once
#include <stddef.h>

#include "kinds.h"

#define LAYER_SPEC_MAX 64
#define LAYER_UNITS_MAX 65536

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
	X(LAYER_BATCHNORM, "batchnorm", 0, 0, "batchnorm")

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
	int units;   /* dense: output width, 0 for the classes; conv2d: filters */
	int size;    /* conv2d: kernel height = width; pools: window */
	int stride;  /* conv2d: 1 by default; pools: size by default */
	int same;    /* conv2d: 1 for 'same' padding (default), 0 for 'valid' */
	float rate;  /* dropout: fraction of units zeroed while training */
};

/* Parses desc into spec[0..*n): 0, or -1 with a user_error naming the
 * option (what, e.g. "--model"), the layer's position (1-based) and text,
 * and what was expected. */
int layer_spec_parse(const char *desc, const char *what, struct layer_spec *spec, int max,
		     int *n);
/* The MLP of --layers: dense:W,ACT for each width, then dense. */
int layer_spec_mlp(const int *hidden, int n_hidden, enum act_kind act, struct layer_spec *spec,
		   int max);
/* The canonical text of spec[0..n) (defaults written out), e.g.
 * "conv2d:32:3:1:same,relu,dense"; returns buf. */
const char *layer_spec_text(const struct layer_spec *spec, int n, char *buf, size_t len);
/* The activation kind a layer applies (ACT_RELU, ...), or -1 when it is
 * not an activation layer. */
int layer_spec_act(const struct layer_spec *s);
