/* Per-element formulas of the sequence layers, shared by the CPU backend
 * and the CUDA kernels as mathfn.h's are: layer normalization over the last
 * axis, the attention softmax with its causal mask, and the embedding's
 * look-up. The reductions around them (a row's mean, a column's sum) are
 * each backend's own, in a fixed order.
 *
 *   layer norm   mean = sum(x) / C, rstd = 1 / sqrt(sum((x - mean)^2) / C + eps)
 *                y = (x - mean) * rstd * gamma + beta
 *                dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma
 *   softmax      y_j = exp(s x_j - max) / sum, masked (causal) j > i: 0
 *                dx_j = s * y_j * (dy_j - sum_k dy_k y_k) */
#pragma once
#include "mathfn.h"

/* 1 / sqrt(var + eps): layer norm's (and batch norm's) reciprocal std. */
MT_FN float ln_rstd(double var, float eps) { return (float)(1.0 / sqrt(var + (double)eps)); }

/* One normalized value: (x - mean) * rstd * gamma + beta. */
MT_FN float ln_y(float x, float mean, float rstd, float gamma, float beta)
{
	return (x - mean) * rstd * gamma + beta;
}

/* One value of dx, given g = dy * gamma, xhat = (x - mean) * rstd and the
 * row's means of g and of g * xhat. */
MT_FN float ln_dx(float g, float xhat, float rstd, float mean_g, float mean_gx)
{
	return rstd * (g - mean_g - xhat * mean_gx);
}

/* Whether the causal mask hides key j from query i: a token attends to
 * itself and the tokens before it. */
MT_FN int attn_masked(int causal, int i, int j) { return causal && j > i; }

/* One value of the softmax's backward from its output y: s y (dy - dot),
 * dot the row's sum of dy * y. */
MT_FN float softmax_dx(float y, float dy, float dot, float scale)
{
	return scale * y * (dy - dot);
}

/* An embedding's row for token id v (a float holding an integer id):
 * clamped into [0, vocab) so that a bad id can never index outside the
 * table (the data reader refuses such ids first). */
MT_FN size_t embed_row(float v, int vocab)
{
	long id = (long)v;
	return (size_t)(id < 0 ? 0 : id >= vocab ? vocab - 1 : id);
}
