/* What io/weights_file.c (the kind of a file, the reader child) and the
 * readers of each kind share: weights_safetensors.c, weights_keras_h5.c
 * (Keras' weights file, read and written) and weights_keras_zip.c (the
 * .keras zip, read and written); not for other modules. */
#pragma once
#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "check.h"
#include "ckpt_format.h"

#define WEIGHTS_CELLS_MAX ((size_t)1 << 34) /* values of one tensor, at most */
#define SAFETENSORS_HEADER_MAX ((uint64_t)100 << 20) /* the format's own bound */
#define KERAS_WEIGHTS_MEMBER "model.weights.h5"  /* a .keras zip's weights */

/* A growing list of tensors (v[0..n), room for cap). */
struct tensors {
	struct ckpt_var *v;
	int n, cap;
};
/* A new zeroed entry at the end of t. */
static inline struct ckpt_var *weights_add_tensor(struct tensors *t)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 32;
		struct ckpt_var *grown = realloc(t->v, sizeof(*t->v) * (size_t)(t->cap + 1));
		ALLOC_CHECK(grown);
		t->v = grown;
	}
	struct ckpt_var *v = &t->v[t->n++];
	memset(v, 0, sizeof(*v));
	return v;
}

/* Every tensor of the safetensors file open as fd (size bytes) into t,
 * each as float32. 0, or -1 with a user_error naming path. */
int weights_read_safetensors(const char *path, int fd, off_t size, struct tensors *t);
/* Opens path read-only, or with image the HDF5 file in image[0..len)
 * (path then only names it), read where it lies, uncopied: image must
 * outlive the file. A file id, or negative. */
hid_t weights_open_h5(const char *path, const void *image, size_t len);
/* Keras' layers' variables of the open file f into t ("<layer>/vars/<i>"),
 * or *is_keras 0 when f has no "layers" group (an mtrain checkpoint, or
 * not a weights file). 0, or -1 with a user_error naming path. */
int weights_read_keras_h5(const char *path, hid_t f, struct tensors *t, int *is_keras);
/* The weights of the .keras zip path into t. 0, or -1 with a user_error. */
int weights_read_keras_zip(const char *path, struct tensors *t);
