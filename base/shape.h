/* Tensor shapes as mtrain stores them: rank 1 to SHAPE_MAX_RANK, dimensions
 * outermost first, as Keras lays them out (a conv2d kernel is
 * [kh, kw, in, out], e.g. [3,3,1,32]). The one place for a shape's element
 * count and its text, shared by the registry, checkpoints and export. */
#pragma once
#include <stddef.h>

/* The highest rank of a variable: 4, a conv2d kernel. */
#define SHAPE_MAX_RANK 4

/* The number of elements of dims[0..ndim): their product (1 for ndim 0).
 * The caller knows the product fits (shape_fits checks one it does not). */
static inline size_t shape_cells(int ndim, const long *dims)
{
	size_t n = 1;
	for (int i = 0; i < ndim; i++)
		n *= (size_t)dims[i];
	return n;
}

/* 1 when ndim is 1 to SHAPE_MAX_RANK, every dims[i] >= 0 and their product
 * at most max_cells (checked without overflow), else 0. */
static inline int shape_fits(int ndim, const long *dims, size_t max_cells)
{
	if (ndim < 1 || ndim > SHAPE_MAX_RANK)
		return 0;
	size_t n = 1;
	for (int i = 0; i < ndim; i++) {
		if (dims[i] < 0 || (dims[i] && n > max_cells / (size_t)dims[i]))
			return 0;
		n *= (size_t)dims[i];
	}
	return n <= max_cells;
}

/* "[3,3,1,32]", "[10]": also the shape as a JSON array. */
void shape_text(int ndim, const long *dims, char *buf, size_t len);
