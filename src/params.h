/* The parameter registry: every variable's canonical name (TF/Keras style,
 * "dense/kernel", "dense_1/bias", "batch_normalization/moving_mean"), shape
 * and place in the flat parameter buffer. Trainable variables come first
 * (offsets [0, T)), then the non-trainable ones (batch norm's moving
 * statistics, [T, P)): gradients, optimizer slots and EMA shadows cover
 * [0, T) with the same layout, so each is one allocation and each update is
 * one flat pass. No name ever carries a replica index: every rank builds the
 * same registry. */
#pragma once
#include <stddef.h>

#include "shape.h"
#include "shard.h" /* the registry's split over ranks under ZeRO-1 */

#define PARAM_NAME_LEN 96
#define PARAM_MAX 2048 /* 4 a layer at most: batchnorm's */

struct param {
	char name[PARAM_NAME_LEN]; /* e.g. "dense_1/kernel" */
	int ndim;                  /* 1 to SHAPE_MAX_RANK */
	long shape[SHAPE_MAX_RANK]; /* e.g. {256, 256}, {3, 3, 1, 32}; 0 past ndim */
	size_t offset;             /* first element in the flat buffer, a multiple
				    * of PARAM_ALIGN (mtrain.h); gaps are zero */
	size_t size;               /* elements, shape_cells(ndim, shape) */
	int trainable;             /* 1, or 0 for a non-trainable variable */
};

struct params {
	int n;                     /* registered variables */
	struct param p[PARAM_MAX];
	size_t total;              /* P: elements over all variables */
	int n_trainable;           /* p[0, n_trainable) are the trainable ones */
	size_t trainable;          /* T: their end in the flat buffer (<= P) */
};

/* Empties the registry. */
void params_init(struct params *reg);
/* Registers the trainable variable name with shape dims[0..ndim); returns
 * its offset. Aborts on a duplicate name, a full registry, ndim outside 1
 * to SHAPE_MAX_RANK or a trainable variable after a non-trainable one
 * (programming errors). */
size_t params_add(struct params *reg, const char *name, int ndim, const long *dims);
/* The same for a non-trainable variable: after every trainable one. */
size_t params_add_state(struct params *reg, const char *name, int ndim, const long *dims);
/* Values over all variables, trainable or not (P less the alignment
 * padding): the start line's parameter count. */
size_t params_count(const struct params *reg);
/* The variable called name, or NULL. */
const struct param *params_find(const struct params *reg, const char *name);
/* "name[shape];..." for every variable: equal signatures, equal registries. */
void params_signature(const struct params *reg, char *buf, size_t len);
/* "<var>/<suffix>", e.g. "dense/kernel/ExponentialMovingAverage". */
void params_slot_name(const char *var, const char *suffix, char *buf, size_t len);
/* Keras' name for the i-th layer (from 0) named kind: "dense", "dense_1",
 * "conv2d_2", ... */
void params_layer_name(const char *kind, int i, char *buf, size_t len);
