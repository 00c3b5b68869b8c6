/* What a checkpoint file holds, in memory: the format's constants, one
 * variable, the root attributes. The readers in this process
 * (ckpt_file.c), the writer, the root attributes' table (ckpt_meta.c) and
 * the public API (ckpt.h) all build on this; it builds on none of them. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mtrain.h"
#include "shape.h"

#define CKPT_FORMAT "mtrain-checkpoint"
/* 2: HDF5 1.10's checksummed metadata, a digest of every variable's values
 * and of the root attributes. 3: the root attribute order (the run's order
 * of the rows, order.h). Versions 1 and 2 still read; they were made with
 * the stored order, which a run resuming them keeps. 4: the root attribute
 * input_shape (inspect lays the model out from it); older files read
 * without it. */
#define CKPT_FORMAT_VERSION 4
/* Each dataset's FNV-1a 64 of its values as written (int64). */
#define CKPT_DIGEST_ATTR "fnv1a64"
#define CKPT_NAME_LEN 128
/* The lock file of a checkpoint folder. */
#define CKPT_LOCK_NAME ".mtrain.lock"

/* One float32 variable: written from data, or read into data. */
struct ckpt_var {
	char name[CKPT_NAME_LEN]; /* e.g. "dense/kernel/ExponentialMovingAverage" */
	int ndim;                 /* 1 to SHAPE_MAX_RANK */
	long shape[SHAPE_MAX_RANK]; /* e.g. {784, 256}, {3, 3, 1, 32}; 0 past ndim */
	float *data;              /* host memory, ckpt_var_cells(v) floats */
};

/* The number of floats in v: the product of its shape. */
static inline size_t ckpt_var_cells(const struct ckpt_var *v)
{
	return shape_cells(v->ndim, v->shape);
}

/* Root attributes. */
struct ckpt_meta {
	int format_version;  /* as read, 1 to CKPT_FORMAT_VERSION; ckpt_write
			      * writes CKPT_FORMAT_VERSION whatever it holds */
	long global_step;    /* completed optimizer updates, e.g. 2340 */
	long epoch;          /* epoch of the next step, e.g. 5 */
	long step_in_epoch;  /* global batches of that epoch already done */
	int batch;           /* global batch the position counts in, e.g. 128 */
	uint64_t seed;       /* e.g. 42 */
	int world_size;      /* ranks that wrote it, for information */
	int input_dim;       /* D of the model, e.g. 784 */
	int classes;         /* C of the model, e.g. 10 */
	long train_rows;     /* rows of the training set the position counts in */
	char *config;        /* the full configuration, key = value lines;
			      * malloc'd by the readers (ckpt_meta_free) */
	char created[64];    /* UTC, ISO 8601 */
	char version[32];    /* mtrain version */
	char order[32];      /* the run's order of the rows (order.h), e.g.
			      * "feistel-1"; a file before format 3 reads as
			      * "fisher-yates-1", the order it was made with */
	char input_shape[32]; /* the model's input rows, "H,W,C" (format 4 on:
			      * inspect's picture of the model), "" before */
	uint64_t digest;     /* FNV-1a 64 of the fields above (format 2 on);
			      * ckpt_write computes it */
};

/* Frees the malloc'd text fields of a meta the readers filled (config,
 * and any text field the table of ckpt_meta.c gains), leaving them NULL.
 * (ckpt_meta.c) */
void ckpt_meta_free(struct ckpt_meta *m);

/* Frees vars[0..n) and their data (ckpt_read_all's result; NULL is a
 * no-op). */
/* Whether v, one of vars[0..n), is another's slot or shadow, named
 * "<that variable>/<suffix>" ("dense/kernel/Adam",
 * "dense/kernel/ExponentialMovingAverage"), rather than a weight. */
static inline int ckpt_var_is_slot(const struct ckpt_var *vars, int n, const struct ckpt_var *v)
{
	for (int i = 0; i < n; i++) {
		size_t len = strlen(vars[i].name);
		if (&vars[i] != v && !strncmp(v->name, vars[i].name, len) && v->name[len] == '/')
			return 1;
	}
	return 0;
}

static inline void ckpt_free_vars(struct ckpt_var *vars, int n)
{
	for (int i = 0; vars && i < n; i++)
		free(vars[i].data);
	free(vars);
}
