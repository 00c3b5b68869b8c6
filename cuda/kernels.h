/* Launchers of the CUDA backend's kernels. Each has the signature of its CPU
 * twin in src/backend_cpu.c plus the stream: outputs first, then const
 * inputs, then sizes, then the stream. */
#pragma once
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

void cuda_bias_act(float *a, float *z, const float *bias, int rows, int cols,
		   enum act_kind act, cudaStream_t s);
void cuda_act_backward(float *dz, const float *da, const float *z, size_t n,
		       enum act_kind act, cudaStream_t s);
void cuda_act_forward(float *a, const float *z, size_t n, enum act_kind act, cudaStream_t s);
void cuda_dropout(float *y, const float *x, int rows, int cols, const struct dropout_key *k,
		  cudaStream_t s);
void cuda_im2col(float *cols, const float *x, int rows, const struct window *w, cudaStream_t s);
void cuda_col2im(float *dx, const float *cols, int rows, const struct window *w, cudaStream_t s);
void cuda_pool(float *y, const float *x, int rows, const struct window *w, int max,
	       cudaStream_t s);
void cuda_pool_backward(float *dx, const float *dy, const float *x, int rows,
			const struct window *w, int max, cudaStream_t s);
void cuda_col_moment(float *m, const float *x, const float *center, int rows, int cols,
		     float scale, cudaStream_t s);
void cuda_bn_forward(float *y, const float *x, const float *mean, const float *var,
		     const float *gamma, const float *beta, int rows, int cols, float eps, float *a,
		     enum act_kind act, cudaStream_t s);
void cuda_bn_backward_sums(float *sums, const float *dy, const float *x, const float *mean,
			   const float *var, int rows, int cols, float eps, const float *z,
			   enum act_kind act, cudaStream_t s);
void cuda_bn_backward(float *dx, const float *dy, const float *x, const float *mean,
		      const float *var, const float *gamma, const float *sums, int rows, int cols,
		      float eps, float inv_n, const float *z, enum act_kind act, cudaStream_t s);
void cuda_add(float *y, const float *a, const float *b, size_t n, float *out, enum act_kind act,
	      cudaStream_t s);
void cuda_scale(float *x, size_t n, float alpha, cudaStream_t s);
void cuda_bias_grad(float *dbias, const float *dz, int rows, int cols, cudaStream_t s);
void cuda_xent(float *dlogits, float *stats, const float *logits, const int32_t *labels,
	       int rows, int classes, float scale, cudaStream_t s);
void cuda_optim_update(float *w, const float *g, float *slot1, float *slot2, size_t n,
		       const struct optim_hp *hp, cudaStream_t s);
void cuda_ema_update(float *shadow, const float *w, size_t n, float decay, cudaStream_t s);
/* *bad (device) = 1 when any of x (n) is NaN or infinite, else 0. */
void cuda_nonfinite(unsigned *bad, const float *x, size_t n, cudaStream_t s);
/* part (device, CUDA_SUMSQ_PARTS) = the sums of squares of x (n), in
 * double, each of a fixed part of x (a block's grid-stride share): the host
 * adds them in order, so the total does not depend on scheduling. */
#define CUDA_SUMSQ_PARTS 256
void cuda_sumsq_parts(double *part, const float *x, size_t n, cudaStream_t s);
/* The sequence ops (seq.cu), twins of src/backend_cpu_seq.c. */
void cuda_softmax(float *y, const float *x, int rows, int cols, float scale, int causal,
		  cudaStream_t s);
void cuda_softmax_backward(float *dx, const float *dy, const float *y, int rows, int cols,
			   float scale, cudaStream_t s);
void cuda_ln_forward(float *y, float *mean, float *rstd, const float *x, const float *gamma,
		     const float *beta, int rows, int cols, float eps, cudaStream_t s);
void cuda_ln_backward(float *dx, float *dgamma, float *dbeta, const float *dy, const float *x,
		      const float *mean, const float *rstd, const float *gamma, int rows, int cols,
		      cudaStream_t s);
void cuda_embed(float *y, const float *ids, const float *table, int n, int cols, int vocab,
		cudaStream_t s);
void cuda_embed_backward(float *dtable, const float *dy, const float *ids, int n, int cols,
			 int vocab, int add, cudaStream_t s);
