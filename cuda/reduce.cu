/* Reductions: bias gradients (column sums) and softmax cross-entropy. Both
 * sum in a fixed order, so results are the same run after run.
 *   dbias[j] = sum_r dz[r, j]
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
