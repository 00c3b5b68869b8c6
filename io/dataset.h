/* Training and evaluation data: HDF5 files with dataset "x" [N, D] or, for
 * images, [N, H, W, C] (channels last, as Keras stores them; float32, or
 * uint8 scaled to [0,1]) and dataset "y" [N] (integer class ids), loaded
 * whole or as one rank's slice, and the IDX (.gz) importer that writes them. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "mtrain.h"

/* More classes than this is a mistake in the labels, not a model. */
#define DATASET_MAX_CLASSES (1 << 20)

struct dataset {
	char path[PATH_LEN];
	long n_total;   /* rows in the file, e.g. 60000 */
	long first, n;  /* rows held here: [first, first + n) */
	int dim;        /* D = H*W*C values per row, e.g. 784 */
	int shape[3];   /* a row's {H, W, C}, e.g. {28, 28, 1}; {1, 1, D} when x is
			 * [N, D] (a flat row) */
	int classes;    /* attribute num_classes of y, else max(y) + 1 */
	uint8_t *x8;    /* (n, D) when stored as uint8, else NULL; rows of
			 * (H, W, C) for images */
	float *xf;      /* (n, D) when stored as float32, else NULL */
	int32_t *y;     /* (n) */
};

/* Loads rows [part*N/parts, (part+1)*N/parts) of path: (0, 1) loads all.
 * Checks layout (x of rank 2 or 4), dtypes, NaN/Inf and negative labels.
 * Returns 0, or -1 with a user_error naming the file and the problem. */
int dataset_load(struct dataset *d, const char *path, int part, int parts);
void dataset_free(struct dataset *d);
/* A row's shape as text: "[784]" for a flat row, "[28,28,1]" for images. */
void dataset_row_text(const struct dataset *d, char *buf, size_t len);
/* Checks every label held is below classes, which `whose` had (e.g. "the
 * training set"). 0, or -1 with a user_error naming the first bad row. */
int dataset_check_labels(const struct dataset *d, int classes, const char *whose);
/* x (rows, D) and y (rows) = rows idx[0..rows) of d (indices relative to
 * d->first), uint8 scaled by 1/255. */
void dataset_gather(const struct dataset *d, const uint32_t *idx, int rows,
		    float *x, int32_t *y);
/* Same for the contiguous rows [begin, begin + rows). */
void dataset_rows(const struct dataset *d, long begin, int rows, float *x, int32_t *y);
/* Writes an HDF5 data file (x uint8 when x8, else float32 xf) of n rows of
 * shape row ({H, W, C}: x [n, H, W, C]; {1, 1, D}: x [n, D]) under a
 * temporary name, then renames it into place. Returns 0 or -1 (user_error). */
int dataset_write(const char *path, const uint8_t *x8, const float *xf,
		  const int32_t *y, long n, const int row[3], int classes);
/* Converts IDX images (.gz or raw) [N, rows, cols] and labels into path,
 * x as [N, rows, cols, 1] (Fashion-MNIST: [N, 28, 28, 1]). 0 or -1. */
int dataset_import_idx(const char *images, const char *labels, const char *path);
