/* Reductions: bias gradients (column sums), batch normalization's column
 * moments and backward sums, and softmax cross-entropy. All sum in a fixed
 * order, so results are the same run after run.
 *   dbias[j] = sum_r dz[r, j]
 *   m[j] = scale * sum_r x[r, j]  or  scale * sum_r (x[r, j] - center[j])^2
 *   sums[j] = sum_r dy[r, j] * xhat[r, j], sums[C + j] = sum_r dy[r, j]
 *   loss_r, dlogits_r = xent_row(logits_r) (mathfn.h, shared with the CPU)
 *   stats += {sum_r loss_r, #(argmax_r == y_r)} */
#include "cuda_check.h"
#include "kernels.h"
#include "mathfn.h"

#define THREADS 256

/* One thread per column, rows in order: coalesced across the warp. */
__global__ void bias_grad_kernel(float *dbias, const float *dz, int rows, int cols)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= cols)
		return;
	float sum = 0.0f;
	for (int r = 0; r < rows; r++)
		sum += dz[(size_t)r * cols + j];
	dbias[j] = sum;
}

/* The block's threads' partials part[THREADS] summed in a fixed tree into
 * part[0]. */
static __device__ void block_sum(double *part)
{
	__syncthreads();
	for (int half = THREADS / 2; half > 0; half /= 2) {
		if (threadIdx.x < half)
			part[threadIdx.x] += part[threadIdx.x + half];
		__syncthreads();
	}
}

/* Batch normalization's columns (every position of a batch: long): one
 * block per column, its threads taking rows tid, tid + THREADS, ... */
__global__ void col_moment_kernel(float *m, const float *x, const float *center, int rows,
				  int cols, float scale)
{
	__shared__ double part[THREADS];
	int j = blockIdx.x;
	float c = center ? center[j] : 0.0f;
	double acc = 0.0;
	for (int r = threadIdx.x; r < rows; r += THREADS)
		acc += bn_moment_term(x[(size_t)r * cols + j], c, center != NULL);
	part[threadIdx.x] = acc;
	block_sum(part);
	if (threadIdx.x == 0)
		m[j] = (float)(part[0] * scale);
}

__global__ void bn_backward_sums_kernel(float *sums, const float *dy, const float *x,
					const float *mean, const float *var, int rows, int cols,
					float eps, const float *z, enum act_kind act)
{
	__shared__ double part[2][THREADS];
	int j = blockIdx.x;
	float inv = bn_invstd(var[j], eps);
	double dgamma = 0.0, dbeta = 0.0;
	for (int r = threadIdx.x; r < rows; r += THREADS) {
		size_t at = (size_t)r * cols + j;
		float d = fused_act_dy(act, z, dy, at);
		dgamma += d * bn_xhat(x[at], mean[j], inv);
		dbeta += d;
	}
	part[0][threadIdx.x] = dgamma;
	part[1][threadIdx.x] = dbeta;
	block_sum(part[0]);
	block_sum(part[1]);
	if (threadIdx.x == 0) {
		sums[j] = (float)part[0][0];
		sums[cols + j] = (float)part[1][0];
	}
}

/* One block: each thread takes rows tid, tid + THREADS, ...; the block then
 * sums the threads' partials in a fixed tree. */
__global__ void xent_kernel(float *dlogits, float *stats, const float *logits,
			    const int32_t *labels, int rows, int classes, float scale)
{
	__shared__ double loss_part[THREADS];
	__shared__ int correct_part[THREADS];
	double loss = 0.0;
	int correct = 0;
	for (int r = threadIdx.x; r < rows; r += THREADS) {
		int hit;
		loss += xent_row(logits + (size_t)r * classes, classes, labels[r], scale,
				 dlogits ? dlogits + (size_t)r * classes : NULL, &hit);
		correct += hit;
	}
	loss_part[threadIdx.x] = loss;
	correct_part[threadIdx.x] = correct;
	__syncthreads();
	for (int half = THREADS / 2; half > 0; half /= 2) {
		if (threadIdx.x < half) {
			loss_part[threadIdx.x] += loss_part[threadIdx.x + half];
			correct_part[threadIdx.x] += correct_part[threadIdx.x + half];
		}
		__syncthreads();
	}
	if (threadIdx.x == 0) {
		stats[0] += (float)loss_part[0];
		stats[1] += (float)correct_part[0];
	}
}

void cuda_bias_grad(float *dbias, const float *dz, int rows, int cols, cudaStream_t s)
{
	if (!cols)
		return;
	bias_grad_kernel<<<(cols + THREADS - 1) / THREADS, THREADS, 0, s>>>(dbias, dz, rows, cols);
	CUDA_CHECK_LAUNCH();
}

void cuda_xent(float *dlogits, float *stats, const float *logits, const int32_t *labels,
	       int rows, int classes, float scale, cudaStream_t s)
{
	xent_kernel<<<1, THREADS, 0, s>>>(dlogits, stats, logits, labels, rows, classes, scale);
	CUDA_CHECK_LAUNCH();
}

void cuda_col_moment(float *m, const float *x, const float *center, int rows, int cols,
		     float scale, cudaStream_t s)
{
	if (!cols)
		return;
	col_moment_kernel<<<cols, THREADS, 0, s>>>(m, x, center, rows, cols, scale);
	CUDA_CHECK_LAUNCH();
}

void cuda_bn_backward_sums(float *sums, const float *dy, const float *x, const float *mean,
			   const float *var, int rows, int cols, float eps, const float *z,
			   enum act_kind act, cudaStream_t s)
{
	if (!cols)
		return;
	bn_backward_sums_kernel<<<cols, THREADS, 0, s>>>(sums, dy, x, mean, var, rows, cols, eps, z,
							 act);
	CUDA_CHECK_LAUNCH();
}
