/* The sequence layers' kernels, twins of src/backend_cpu_seq.c: the
 * attention's masked softmax and its backward, layer normalization, and the
 * embedding's look-up and gradient. The per-element math is mathfn_seq.h's,
 * shared with the CPU; every sum runs in an order the code fixes (lanes,
 * then a fixed tree; never atomics), so results are the same bits run
 * after run. Per row r of (R,C), s the scale, i = r % C the query:
 *   softmax     y_j = exp(s x_j - max) / sum_k exp(s x_k - max), j > i
 *               masked under causal (attn_masked): 0
 *   backward    dx_j = s * y_j * (dy_j - sum_k dy_k y_k)
 *   layer norm  mean = sum_j x_j / C (double), rstd = ln_rstd(sum_j (x_j -
 *               mean)^2 / C, eps), y = ln_y(x, mean, rstd, gamma, beta)
 *   backward    dx = ln_dx(dy gamma, xhat, rstd, mean_j(dy gamma),
 *               mean_j(dy gamma xhat)); dgamma_j = sum_r dy xhat,
 *               dbeta_j = sum_r dy (column sums, double)
 *   embedding   y_i = table[embed_row(ids_i)]; dtable_v = sum of dy_i over
 *               the i with embed_row(ids_i) = v, i ascending (the CPU's
 *               order: the same bits) */
#include "cuda_check.h"
#include "kernels.h"
#include "mathfn_seq.h"

#define THREADS 256
#define WARP 32
#define ROWS_PER_BLOCK (THREADS / WARP) /* the row kernels: a warp per row */
#define FULL_MASK 0xffffffffu
/* Layer norm's column sums: a block takes COL_TILE columns (a warp reads
 * them from one row: coalesced) and its COL_GROUPS warps rows g, g +
 * COL_GROUPS, ... */
#define COL_TILE 32
#define COL_GROUPS 32
/* The embedding's gradient: threads wanted in flight (see
 * embed_backward_kernel). */
#define EMBED_GRAD_THREADS (1 << 15)

static unsigned blocks_for(size_t n) { return (unsigned)((n + THREADS - 1) / THREADS); }

static unsigned row_blocks(int rows)
{
	return (unsigned)((rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
}

/* v summed over the warp's lanes by a butterfly: an order fixed by the
 * lane numbers, and every lane ends with the same bits (a + b == b + a at
 * each step). Every lane of the warp must call it. */
template <typename T> static __device__ T warp_sum(T v)
{
	for (int m = WARP / 2; m > 0; m /= 2)
		v += __shfl_xor_sync(FULL_MASK, v, m);
	return v;
}

static __device__ float warp_max(float v)
{
	for (int m = WARP / 2; m > 0; m /= 2)
		v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, m));
	return v;
}

/* The row kernels' row: a whole warp's, so that a warp past the last row
 * leaves whole and the shuffles above always see all 32 lanes. Each lane
 * takes the columns lane, lane + 32, ... in every pass over the row: a
 * value it reads it alone writes (y may alias x, dx dy). */
static __device__ int warp_row(void) { return blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP; }

__global__ void softmax_kernel(float *y, const float *x, int rows, int cols, float scale,
			       int causal)
{
	int r = warp_row(), lane = threadIdx.x % WARP;
	if (r >= rows)
		return;
	const float *xr = x + (size_t)r * cols;
	float *yr = y + (size_t)r * cols;
	int q = r % cols, last = causal ? q : cols - 1; /* keys up to last */
	/* s x rounded before the subtraction, as on the CPU (no fused
	 * multiply-add): the row's max gives exp(0) = 1 exactly. */
	float mx = -INFINITY;
	for (int j = lane; j <= last; j += WARP)
		mx = fmaxf(mx, __fmul_rn(xr[j], scale));
	mx = warp_max(mx);
	float sum = 0.0f;
	for (int j = lane; j <= last; j += WARP) {
		float e = mt_expf(__fmul_rn(xr[j], scale) - mx);
		yr[j] = e;
		sum += e;
	}
	float inv = 1.0f / warp_sum(sum);
	for (int j = lane; j < cols; j += WARP)
		yr[j] = attn_masked(causal, q, j) ? 0.0f : yr[j] * inv;
}

__global__ void softmax_backward_kernel(float *dx, const float *dy, const float *y, int rows,
					int cols, float scale)
{
	int r = warp_row(), lane = threadIdx.x % WARP;
	if (r >= rows)
		return;
	const float *dyr = dy + (size_t)r * cols, *yr = y + (size_t)r * cols;
	float *dxr = dx + (size_t)r * cols;
	float dot = 0.0f;
	for (int j = lane; j < cols; j += WARP)
		dot += dyr[j] * yr[j];
	dot = warp_sum(dot);
	for (int j = lane; j < cols; j += WARP)
		dxr[j] = softmax_dx(yr[j], dyr[j], dot, scale);
}

/* A row's moments in double, as the CPU takes them. */
__global__ void ln_forward_kernel(float *y, float *mean, float *rstd, const float *x,
				  const float *gamma, const float *beta, int rows, int cols,
				  float eps)
{
	int r = warp_row(), lane = threadIdx.x % WARP;
	if (r >= rows)
		return;
	const float *xr = x + (size_t)r * cols;
	float *yr = y + (size_t)r * cols;
	double s = 0.0, ss = 0.0;
	for (int j = lane; j < cols; j += WARP)
		s += xr[j];
	float mu = (float)(warp_sum(s) / cols);
	for (int j = lane; j < cols; j += WARP) {
		double d = (double)xr[j] - mu;
		ss += d * d;
	}
	float rs = ln_rstd(warp_sum(ss) / cols, eps);
	for (int j = lane; j < cols; j += WARP)
		yr[j] = ln_y(xr[j], mu, rs, gamma[j], beta[j]);
	if (lane == 0) {
		mean[r] = mu;
		rstd[r] = rs;
	}
}

/* dx of one row; the row's sums of g = dy gamma and g xhat in float, as on
 * the CPU. */
__global__ void ln_dx_kernel(float *dx, const float *dy, const float *x, const float *mean,
			     const float *rstd, const float *gamma, int rows, int cols)
{
	int r = warp_row(), lane = threadIdx.x % WARP;
	if (r >= rows)
		return;
	const float *dyr = dy + (size_t)r * cols, *xr = x + (size_t)r * cols;
	float *dxr = dx + (size_t)r * cols;
	float mu = mean[r], rs = rstd[r], sg = 0.0f, sgx = 0.0f;
	for (int j = lane; j < cols; j += WARP) {
		float xhat = (xr[j] - mu) * rs, g = dyr[j] * gamma[j];
		sg += g;
		sgx += g * xhat;
	}
	float mg = warp_sum(sg) / (float)cols, mgx = warp_sum(sgx) / (float)cols;
	for (int j = lane; j < cols; j += WARP)
		dxr[j] = ln_dx(dyr[j] * gamma[j], (xr[j] - mu) * rs, rs, mg, mgx);
}

/* dgamma, dbeta: thread (tx, g) of a block (COL_TILE, COL_GROUPS) sums
 * column blockIdx.x * COL_TILE + tx over rows g, g + COL_GROUPS, ... in
 * double, then the block sums its groups' partials in a fixed tree. Every
 * thread reaches every barrier (no early return); those past the last
 * column add nothing. */
__global__ void __launch_bounds__(COL_TILE * COL_GROUPS)
	ln_param_grad_kernel(float *dgamma, float *dbeta, const float *dy, const float *x,
			     const float *mean, const float *rstd, int rows, int cols)
{
	__shared__ double part[2][COL_GROUPS][COL_TILE];
	int tx = threadIdx.x, g = threadIdx.y, j = blockIdx.x * COL_TILE + tx;
	double dg = 0.0, db = 0.0;
	if (j < cols)
		for (int r = g; r < rows; r += COL_GROUPS) {
			size_t at = (size_t)r * cols + j;
			float xhat = (x[at] - mean[r]) * rstd[r];
			dg += dy[at] * xhat;
			db += dy[at];
		}
	part[0][g][tx] = dg;
	part[1][g][tx] = db;
	__syncthreads();
	for (int half = COL_GROUPS / 2; half > 0; half /= 2) {
		if (g < half) {
			part[0][g][tx] += part[0][g + half][tx];
			part[1][g][tx] += part[1][g + half][tx];
		}
		__syncthreads();
	}
	if (g == 0 && j < cols) {
		dgamma[j] = (float)part[0][0][tx];
		dbeta[j] = (float)part[1][0][tx];
	}
}

/* One thread per element of y (N,C). */
__global__ void embed_kernel(float *__restrict__ y, const float *__restrict__ ids,
			     const float *__restrict__ table, size_t n, int cols, int vocab)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	size_t t = i / cols, j = i % cols;
	y[i] = table[embed_row(ids[t], vocab) * cols + j];
}

/* Thread (p, j) owns column j of the table's rows v with v % parts == p
 * (parts a power of two): it walks all the ids in order and adds dy's row
 * i into each of its rows that id i names, so every value of dtable is
 * one thread's sum in the order i ascending. The value of the row it last
 * touched stays in a register until another of its rows comes (a run of
 * one id costs no memory round trip); the sums are the same. More parts,
 * shorter chains of dependent reads per thread; every thread reads all the
 * ids, so their number is held near EMBED_GRAD_THREADS. dtable starts at
 * 0 (the launcher's memset) or at what it is added to. */
__global__ void embed_backward_kernel(float *__restrict__ dtable, const float *__restrict__ dy,
				      const float *__restrict__ ids, int n, int cols, int vocab,
				      unsigned parts)
{
	size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (t >= (size_t)parts * cols)
		return;
	unsigned p = (unsigned)(t / cols);
	int j = (int)(t % cols);
	size_t cur = 0;
	int held = 0; /* whether acc holds row cur's value */
	float acc = 0.0f;
	for (int i = 0; i < n; i++) {
		size_t v = embed_row(ids[i], vocab);
		if (((unsigned)v & (parts - 1)) != p)
			continue;
		if (!held || v != cur) {
			if (held)
				dtable[cur * cols + j] = acc;
			cur = v;
			held = 1;
			acc = dtable[v * cols + j];
		}
		acc += dy[(size_t)i * cols + j];
	}
	if (held)
		dtable[cur * cols + j] = acc;
}

void cuda_softmax(float *y, const float *x, int rows, int cols, float scale, int causal,
		  cudaStream_t s)
{
	if (rows <= 0 || cols <= 0)
		return;
	softmax_kernel<<<row_blocks(rows), THREADS, 0, s>>>(y, x, rows, cols, scale, causal);
	CUDA_CHECK_LAUNCH();
}

void cuda_softmax_backward(float *dx, const float *dy, const float *y, int rows, int cols,
			   float scale, cudaStream_t s)
{
	if (rows <= 0 || cols <= 0)
		return;
	softmax_backward_kernel<<<row_blocks(rows), THREADS, 0, s>>>(dx, dy, y, rows, cols, scale);
	CUDA_CHECK_LAUNCH();
}

void cuda_ln_forward(float *y, float *mean, float *rstd, const float *x, const float *gamma,
		     const float *beta, int rows, int cols, float eps, cudaStream_t s)
{
	if (rows <= 0 || cols <= 0)
		return;
	ln_forward_kernel<<<row_blocks(rows), THREADS, 0, s>>>(y, mean, rstd, x, gamma, beta, rows,
							       cols, eps);
	CUDA_CHECK_LAUNCH();
}

/* The column sums run first: dx may be dy, which they read. */
void cuda_ln_backward(float *dx, float *dgamma, float *dbeta, const float *dy, const float *x,
		      const float *mean, const float *rstd, const float *gamma, int rows, int cols,
		      cudaStream_t s)
{
	if (cols <= 0)
		return;
	dim3 block(COL_TILE, COL_GROUPS);
	unsigned tiles = (unsigned)((cols + COL_TILE - 1) / COL_TILE);
	ln_param_grad_kernel<<<tiles, block, 0, s>>>(dgamma, dbeta, dy, x, mean, rstd,
						       rows > 0 ? rows : 0, cols);
	CUDA_CHECK_LAUNCH();
	if (!dx || rows <= 0)
		return;
	ln_dx_kernel<<<row_blocks(rows), THREADS, 0, s>>>(dx, dy, x, mean, rstd, gamma, rows, cols);
	CUDA_CHECK_LAUNCH();
}

void cuda_embed(float *y, const float *ids, const float *table, int n, int cols, int vocab,
		cudaStream_t s)
{
	size_t total = n > 0 && cols > 0 ? (size_t)n * cols : 0;
	if (!total)
		return;
	embed_kernel<<<blocks_for(total), THREADS, 0, s>>>(y, ids, table, total, cols, vocab);
	CUDA_CHECK_LAUNCH();
}

void cuda_embed_backward(float *dtable, const float *dy, const float *ids, int n, int cols,
			 int vocab, int add, cudaStream_t s)
{
	if (cols <= 0 || vocab <= 0)
		return;
	if (!add)
		CUDA_CHECK(cudaMemsetAsync(dtable, 0, (size_t)vocab * cols * sizeof(float), s));
	if (n <= 0)
		return;
	/* A power of two up to EMBED_GRAD_THREADS / cols, and no more than
	 * the table's rows need. */
	unsigned parts = 1;
	while ((size_t)parts * 2 * cols <= EMBED_GRAD_THREADS && parts < (unsigned)vocab)
		parts *= 2;
	embed_backward_kernel<<<blocks_for((size_t)parts * cols), THREADS, 0, s>>>(
		dtable, dy, ids, n, cols, vocab, parts);
	CUDA_CHECK_LAUNCH();
}
