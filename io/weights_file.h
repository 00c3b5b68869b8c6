/* Weights files that are not mtrain checkpoints: safetensors (an mtrain
 * export or anyone's) and Keras 3's two files, the native model (.keras: a
 * zip of config.json, metadata.json and model.weights.h5) and the weights
 * file (.weights.h5: HDF5, each layer's variables at
 * "layers/<layer>/vars/<i>" in the layer's own order, e.g. a Dense's
 * kernel then bias). Reading any of them (the kind found by its first
 * bytes) for --init-from, in a child process as checkpoints are
 * (sandbox.h); writing Keras' two for `mtrain export`. */
#pragma once
#include <stddef.h>

#include "ckpt_format.h"

/* What a weights file is, by its first bytes (and, for HDF5, whether it
 * has Keras' "layers" group). */
enum weights_kind { WEIGHTS_CKPT, WEIGHTS_SAFETENSORS, WEIGHTS_KERAS, WEIGHTS_KERAS_H5 };
extern const char *const weights_kind_names[]; /* "an mtrain checkpoint", ... */

/* Reads every tensor of path, a safetensors, .keras or Keras .weights.h5
 * file, into *vars (malloc'd, *n entries, each data malloc'd: free with
 * ckpt_free_vars): safetensors' under their names (F32, F16, BF16 or F64,
 * as float32), Keras' as "<layer>/vars/<i>". *kind says which it was;
 * WEIGHTS_CKPT (an HDF5 file without "layers": read it with ckpt_read_all)
 * returns no tensors. 0, or RC_CORRUPT with a user_error naming the file
 * and what is wrong (none of the kinds, a header or member that does not
 * parse, a tensor that is not floating point). */
int weights_read(const char *path, enum weights_kind *kind, struct ckpt_var **vars, int *n);
/* The same in this process (weights_read runs it in the child). */
int weights_read_here(const char *path, enum weights_kind *kind, struct ckpt_var **vars,
		      int *n);

/* One layer of a Keras weights file (or a sublayer's group in it): its
 * name and its variables (in Keras' order, shapes as Keras has them). */
struct keras_layer_vars {
	const char *name;              /* its group under "layers/", e.g.
					* "batch_normalization_1",
					* "multi_head_attention/query_dense" */
	const char *label;             /* its vars' "name" attribute, the layer's
					* own name where it differs ("query"), or
					* NULL: name */
	int n;                         /* 0 to 4 */
	const struct ckpt_var *var[4]; /* e.g. gamma, beta, moving mean, variance */
};
/* The bytes of a Keras 3 weights file (HDF5) holding layers[0..n) (each a
 * group "layers/<name>/vars" named label or name, its variables "0", "1",
 * ...) and the model's
 * own empty "vars", as Keras writes them: malloc'd, *len bytes, or NULL
 * when HDF5 failed (out of memory). */
void *keras_h5_image(const struct keras_layer_vars *layers, int n, const char *model,
		     size_t *len);
/* Writes bytes[0..len) to out through a temporary file renamed into place
 * (either file of Keras'). 0, or -1 with errno (nothing left). */
int weights_write_file(const char *out, const void *bytes, size_t len);
/* The bytes of a .keras zip (members stored, as Keras stores them):
 * metadata.json, config.json and model.weights.h5 from the texts and the
 * weights file's bytes. malloc'd, *len bytes, or NULL when libzip failed
 * (out of memory). */
void *keras_zip_image(const char *metadata, const char *config, const void *h5, size_t h5_len,
		      size_t *len);
