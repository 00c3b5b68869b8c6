/* Element-wise kernels: bias + activation, activation backward, optimizer
 * updates and the EMA step. The math is mathfn.h's, shared with the CPU:
 *   z += bias; a = act(z)          dz = act'(z) * da       a = act(z)
 *   y = x * dropout_scale(seed, step, row, unit, rate)
 *   w = sgd/momentum/adam_step(w, g, slots)
 *   shadow = shadow - (1 - d) * (shadow - w)
 *   y = gamma * bn_xhat(x) + beta          dx = bn_dx(dy, xhat, sums)
 *   x *= alpha */
#include "cuda_check.h"
#include "kernels.h"
#include "mathfn.h"

#define THREADS 256

static unsigned blocks_for(size_t n)
{
	return (unsigned)((n + THREADS - 1) / THREADS);
}

__global__ void bias_act_kernel(float *a, float *z, const float *bias, int rows, int cols,
				enum act_kind act)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i >= (size_t)rows * cols)
		return;
	float v = z[i] + bias[i % cols];
	z[i] = v;
	if (a)
		a[i] = act_fwd(act, v);
}

__global__ void act_backward_kernel(float *dz, const float *da, const float *z, size_t n,
				    enum act_kind act)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		dz[i] = act_bwd(act, z[i], da[i]);
}

__global__ void act_forward_kernel(float *a, const float *z, size_t n, enum act_kind act)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		a[i] = act_fwd(act, z[i]);
}

__global__ void dropout_kernel(float *y, const float *x, int rows, int cols,
			       struct dropout_key k)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i >= (size_t)rows * cols)
		return;
	uint64_t r = i / cols, j = i % cols;
	y[i] = x[i] * dropout_scale(k.seed, k.step, k.row0 + r, j, k.rate);
}

void cuda_act_forward(float *a, const float *z, size_t n, enum act_kind act, cudaStream_t s)
{
	if (!n)
		return;
	act_forward_kernel<<<blocks_for(n), THREADS, 0, s>>>(a, z, n, act);
	CUDA_CHECK_LAUNCH();
}

void cuda_dropout(float *y, const float *x, int rows, int cols, const struct dropout_key *k,
		  cudaStream_t s)
{
	size_t n = (size_t)rows * cols;
	if (!n)
		return;
	dropout_kernel<<<blocks_for(n), THREADS, 0, s>>>(y, x, rows, cols, *k);
	CUDA_CHECK_LAUNCH();
}

/* The windowed ops: one thread per output element, mathfn.h's formula. */
__global__ void im2col_kernel(float *cols, const float *x, size_t n, struct window w)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		cols[i] = win_im2col(x, &w, i);
}

__global__ void col2im_kernel(float *dx, const float *cols, size_t n, struct window w)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		dx[i] = win_col2im(cols, &w, i);
}

__global__ void pool_kernel(float *y, const float *x, size_t n, struct window w, int max)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = win_pool(x, &w, max, i);
}

__global__ void pool_backward_kernel(float *dx, const float *dy, const float *x, size_t n,
				     struct window w, int max)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		dx[i] = win_pool_bwd(dy, x, &w, max, i);
}

void cuda_im2col(float *cols, const float *x, int rows, const struct window *w, cudaStream_t s)
{
	size_t n = (size_t)rows * w->oh * w->ow * w->kh * w->kw * w->c;
	if (!n)
		return;
	im2col_kernel<<<blocks_for(n), THREADS, 0, s>>>(cols, x, n, *w);
	CUDA_CHECK_LAUNCH();
}

void cuda_col2im(float *dx, const float *cols, int rows, const struct window *w, cudaStream_t s)
{
	size_t n = (size_t)rows * w->h * w->w * w->c;
	if (!n)
		return;
	col2im_kernel<<<blocks_for(n), THREADS, 0, s>>>(dx, cols, n, *w);
	CUDA_CHECK_LAUNCH();
}

void cuda_pool(float *y, const float *x, int rows, const struct window *w, int max,
	       cudaStream_t s)
{
	size_t n = (size_t)rows * w->oh * w->ow * w->c;
	if (!n)
		return;
	pool_kernel<<<blocks_for(n), THREADS, 0, s>>>(y, x, n, *w, max);
	CUDA_CHECK_LAUNCH();
}

void cuda_pool_backward(float *dx, const float *dy, const float *x, int rows,
			const struct window *w, int max, cudaStream_t s)
{
	size_t n = (size_t)rows * w->h * w->w * w->c;
	if (!n)
		return;
	pool_backward_kernel<<<blocks_for(n), THREADS, 0, s>>>(dx, dy, x, n, *w, max);
	CUDA_CHECK_LAUNCH();
}

__global__ void optim_kernel(float *w, const float *g, float *s1, float *s2, size_t n,
			     struct optim_hp h)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		w[i] = optim_elem(h.kind, &h, i, w, g, s1, s2);
}

__global__ void ema_kernel(float *shadow, const float *w, size_t n, float decay)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		shadow[i] = ema_step(shadow[i], w[i], decay);
}

void cuda_bias_act(float *a, float *z, const float *bias, int rows, int cols,
		   enum act_kind act, cudaStream_t s)
{
	size_t n = (size_t)rows * cols;
	if (!n)
		return;
	bias_act_kernel<<<blocks_for(n), THREADS, 0, s>>>(a, z, bias, rows, cols, act);
	CUDA_CHECK_LAUNCH();
}

void cuda_act_backward(float *dz, const float *da, const float *z, size_t n,
		       enum act_kind act, cudaStream_t s)
{
	if (!n)
		return;
	act_backward_kernel<<<blocks_for(n), THREADS, 0, s>>>(dz, da, z, n, act);
	CUDA_CHECK_LAUNCH();
}

void cuda_optim_update(float *w, const float *g, float *slot1, float *slot2, size_t n,
		       const struct optim_hp *hp, cudaStream_t s)
{
	if (!n)
		return;
	optim_kernel<<<blocks_for(n), THREADS, 0, s>>>(w, g, slot1, slot2, n, *hp);
	CUDA_CHECK_LAUNCH();
}

__global__ void nonfinite_kernel(unsigned *bad, const float *x, size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n && nonfinite_bits(__float_as_uint(x[i])))
		atomicOr(bad, 1u);
}

/* Block b's share: x[i] for i = b * THREADS + t + k * CUDA_SUMSQ_PARTS *
 * THREADS, summed by thread t, then the threads' sums in a fixed tree. */
__global__ void sumsq_kernel(double *part, const float *x, size_t n)
{
	__shared__ double sum[THREADS];
	double v = 0.0;
	for (size_t i = blockIdx.x * (size_t)THREADS + threadIdx.x; i < n;
	     i += (size_t)CUDA_SUMSQ_PARTS * THREADS)
		v += (double)x[i] * (double)x[i];
	sum[threadIdx.x] = v;
	__syncthreads();
	for (unsigned half = THREADS / 2; half > 0; half /= 2) {
		if (threadIdx.x < half)
			sum[threadIdx.x] += sum[threadIdx.x + half];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		part[blockIdx.x] = sum[0];
}

void cuda_sumsq_parts(double *part, const float *x, size_t n, cudaStream_t s)
{
	sumsq_kernel<<<CUDA_SUMSQ_PARTS, THREADS, 0, s>>>(part, x, n);
	CUDA_CHECK_LAUNCH();
}

void cuda_nonfinite(unsigned *bad, const float *x, size_t n, cudaStream_t s)
{
	CUDA_CHECK(cudaMemsetAsync(bad, 0, sizeof(*bad), s));
	if (!n)
		return;
	nonfinite_kernel<<<blocks_for(n), THREADS, 0, s>>>(bad, x, n);
	CUDA_CHECK_LAUNCH();
}

void cuda_ema_update(float *shadow, const float *w, size_t n, float decay, cudaStream_t s)
{
	if (!n)
		return;
	ema_kernel<<<blocks_for(n), THREADS, 0, s>>>(shadow, w, n, decay);
	CUDA_CHECK_LAUNCH();
}

/* Batch normalization, one thread per element of x (R,C); a = act(y) as
 * well where a is not NULL (an activation fused after it), y then
 * possibly NULL. */
__global__ void bn_forward_kernel(float *y, const float *x, const float *mean, const float *var,
				  const float *gamma, const float *beta, size_t n, int cols,
				  float eps, float *a, enum act_kind act)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int j = (int)(i % cols);
	float v = bn_y(x[i], mean[j], bn_invstd(var[j], eps), gamma[j], beta[j]);
	if (y)
		y[i] = v;
	if (a)
		a[i] = act_fwd(act, v);
}

__global__ void bn_backward_kernel(float *dx, const float *dy, const float *x, const float *mean,
				   const float *var, const float *gamma, const float *sums,
				   size_t n, int cols, float eps, float inv_n, const float *z,
				   enum act_kind act)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int j = (int)(i % cols);
	float inv = bn_invstd(var[j], eps);
	dx[i] = bn_dx(fused_act_dy(act, z, dy, i), bn_xhat(x[i], mean[j], inv), gamma[j], inv, sums[j],
		      sums[cols + j], inv_n);
}

__global__ void add_kernel(float *y, const float *a, const float *b, size_t n, float *out,
			   enum act_kind act)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float v = a[i] + b[i];
	y[i] = v;
	if (out)
		out[i] = act_fwd(act, v);
}

__global__ void scale_kernel(float *x, size_t n, float alpha)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= alpha;
}

void cuda_bn_forward(float *y, const float *x, const float *mean, const float *var,
		     const float *gamma, const float *beta, int rows, int cols, float eps, float *a,
		     enum act_kind act, cudaStream_t s)
{
	size_t n = (size_t)rows * cols;
	if (!n)
		return;
	bn_forward_kernel<<<blocks_for(n), THREADS, 0, s>>>(y, x, mean, var, gamma, beta, n, cols,
							    eps, a, act);
	CUDA_CHECK_LAUNCH();
}

void cuda_bn_backward(float *dx, const float *dy, const float *x, const float *mean,
		      const float *var, const float *gamma, const float *sums, int rows, int cols,
		      float eps, float inv_n, const float *z, enum act_kind act, cudaStream_t s)
{
	size_t n = (size_t)rows * cols;
	if (!n)
		return;
	bn_backward_kernel<<<blocks_for(n), THREADS, 0, s>>>(dx, dy, x, mean, var, gamma, sums, n,
							     cols, eps, inv_n, z, act);
	CUDA_CHECK_LAUNCH();
}

void cuda_add(float *y, const float *a, const float *b, size_t n, float *out, enum act_kind act,
	      cudaStream_t s)
{
	if (!n)
		return;
	add_kernel<<<blocks_for(n), THREADS, 0, s>>>(y, a, b, n, out, act);
	CUDA_CHECK_LAUNCH();
}

void cuda_scale(float *x, size_t n, float alpha, cudaStream_t s)
{
	if (!n)
		return;
	scale_kernel<<<blocks_for(n), THREADS, 0, s>>>(x, n, alpha);
	CUDA_CHECK_LAUNCH();
}
