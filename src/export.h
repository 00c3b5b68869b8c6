/* Export of a checkpoint's model weights for deployment: safetensors
 * (https://github.com/huggingface/safetensors' format), keyed by canonical
 * name, loadable by PyTorch, Keras and JAX tooling; Keras 3's native model
 * (.keras), which keras.saving.load_model rebuilds with no code, and its
 * weights file (.weights.h5) for model.load_weights. */
#pragma once
#include "ckpt.h"
#include "model.h"

/* Which weights an export holds: the variables, or their EMA shadows
 * written under the variables' names. */
enum export_weights { EXPORT_RAW, EXPORT_EMA };

/* Writes ckpt's model weights (no optimizer slots, no shadows beside the
 * chosen weights) to out as safetensors: F32 tensors in the checkpoint's
 * shapes, the checkpoint's step, weights and configuration in the
 * metadata. Written under a unique temporary name and renamed into place;
 * out may not be ckpt; with EXPORT_EMA every weight needs its shadow.
 * 0, or RC_USER/RC_CORRUPT with a user_error (nothing written). */
int export_safetensors(const char *ckpt, const char *out, enum export_weights which);

/* Writes ckpt's model to out as Keras 3's .keras file (whole: config.json,
 * metadata.json, model.weights.h5) or as its .weights.h5 alone: every
 * layer under its mtrain name, the raw or EMA weights (batch norm's moving
 * statistics with either). 0, or RC_USER/RC_CORRUPT with a user_error
 * (nothing written): a layer Keras cannot express is named. */
int export_keras(const char *ckpt, const char *out, enum export_weights which, int whole);
/* Lays out m as the checkpoint at path (its meta read) was trained: its
 * configuration's model on its input shape. 0, or -1 with *why (a
 * phrase: "the file holds no configuration"); no user error is left. */
int export_plan_model(const char *path, const struct ckpt_meta *meta, struct model *m,
		      const char **why);
