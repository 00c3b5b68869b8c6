/* Export of a checkpoint's model weights for deployment: safetensors
 * (https://github.com/huggingface/safetensors' format), keyed by canonical
 * name, loadable by PyTorch, Keras and JAX tooling. */
#pragma once

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
