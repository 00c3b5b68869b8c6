/* The CUDA backend: backend.h on one GPU per rank. Device memory from plain
 * cudaMalloc, all taken at start-up; cuBLAS for matrix products (fp32 with
 * TF32 off, or bf16 inputs with fp32 accumulation for --precision bf16);
 * the kernels of elementwise.cu, reduce.cu and seq.cu for the rest;
 * everything on one compute stream, which a device communicator orders
 * itself against. */
#include "cuda_check.h"
#include "kernels.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUBLAS_WORKSPACE_BYTES ((size_t)32 << 20)

/* The backend's context (be->ctx). */
struct cuda_ctx {
	int device;            /* ordinal this rank uses, e.g. 0 */
	cudaStream_t stream;   /* compute stream */
	cublasHandle_t blas;
	void *workspace;       /* cuBLAS's, CUBLAS_WORKSPACE_BYTES */
	unsigned *flag;        /* (1) device: nonfinite's answer */
	double *parts;         /* (CUDA_SUMSQ_PARTS) device: sumsq's */
	cublasComputeType_t compute; /* CUBLAS_COMPUTE_32F or ..._FAST_16BF */
};

static struct cuda_ctx *ctx_of(const struct backend *be) { return (struct cuda_ctx *)be->ctx; }
static cudaStream_t stream_of(const struct backend *be) { return ctx_of(be)->stream; }

static void *cu_alloc(const struct backend *be, size_t bytes)
{
	void *p = NULL;
	CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
	CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_of(be)));
	CUDA_CHECK(cudaStreamSynchronize(stream_of(be)));
	return p;
}

static void cu_free(const struct backend *be, void *p)
{
	if (p)
		CUDA_CHECK(cudaFree(p));
}

/* The interface lets the caller reuse src at once, and an asynchronous copy
 * from pageable memory only might have staged it on return: wait. Each
 * step's host already waits on its all-reduce, so this costs little. */
static void cu_copy_in(const struct backend *be, void *dst, const void *src, size_t bytes)
{
	CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_of(be)));
	CUDA_CHECK(cudaStreamSynchronize(stream_of(be)));
}

static void *cu_alloc_host(const struct backend *be, size_t bytes)
{
	void *p = NULL;
	CUDA_CHECK(cudaMallocHost(&p, bytes ? bytes : 1));
	memset(p, 0, bytes);
	return p;
}

static void cu_free_host(const struct backend *be, void *p)
{
	if (p)
		CUDA_CHECK(cudaFreeHost(p));
}

/* From pinned memory: truly asynchronous, ordered on the compute stream. */
static void cu_copy_in_async(const struct backend *be, void *dst, const void *src, size_t bytes)
{
	CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_of(be)));
}

static void cu_copy_out(const struct backend *be, void *dst, const void *src, size_t bytes)
{
	CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_of(be)));
	CUDA_CHECK(cudaStreamSynchronize(stream_of(be)));
}

static void cu_copy(const struct backend *be, void *dst, const void *src, size_t bytes)
{
	if (dst != src)
		CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
					   stream_of(be)));
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the
 * operands, keep the leading dimensions of the CPU twin. */
static void cu_matmul(const struct backend *be, float *c, const float *a, const float *b, int m,
		      int n, int k, int ta, int tb, float beta)
{
	const struct cuda_ctx *x = ctx_of(be);
	const float alpha = 1.0f;
	CUBLAS_CHECK(cublasGemmEx(x->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
				  ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_32F,
				  tb ? k : n, a, CUDA_R_32F, ta ? m : k, &beta, c, CUDA_R_32F, n,
				  x->compute, CUBLAS_GEMM_DEFAULT));
}

static void cu_bias_act(const struct backend *be, float *a, float *z, const float *bias,
			int rows, int cols, enum act_kind act)
{
	cuda_bias_act(a, z, bias, rows, cols, act, stream_of(be));
}

static void cu_act_backward(const struct backend *be, float *dz, const float *da, const float *z,
			    size_t n, enum act_kind act)
{
	cuda_act_backward(dz, da, z, n, act, stream_of(be));
}

static void cu_act_forward(const struct backend *be, float *a, const float *z, size_t n,
			   enum act_kind act)
{
	cuda_act_forward(a, z, n, act, stream_of(be));
}

static void cu_dropout(const struct backend *be, float *y, const float *x, int rows, int cols,
		       const struct dropout_key *k)
{
	cuda_dropout(y, x, rows, cols, k, stream_of(be));
}

static void cu_im2col(const struct backend *be, float *cols, const float *x, int rows,
		      const struct window *w)
{
	cuda_im2col(cols, x, rows, w, stream_of(be));
}

static void cu_col2im(const struct backend *be, float *dx, const float *cols, int rows,
		      const struct window *w)
{
	cuda_col2im(dx, cols, rows, w, stream_of(be));
}

static void cu_pool(const struct backend *be, float *y, const float *x, int rows,
		    const struct window *w, int max)
{
	cuda_pool(y, x, rows, w, max, stream_of(be));
}

static void cu_pool_backward(const struct backend *be, float *dx, const float *dy,
			     const float *x, int rows, const struct window *w, int max)
{
	cuda_pool_backward(dx, dy, x, rows, w, max, stream_of(be));
}

static void cu_col_moment(const struct backend *be, float *m, const float *x, const float *center,
			  int rows, int cols, float scale)
{
	cuda_col_moment(m, x, center, rows, cols, scale, stream_of(be));
}

static void cu_bn_forward(const struct backend *be, float *y, const float *x, const float *mean,
			  const float *var, const float *gamma, const float *beta, int rows,
			  int cols, float eps, float *a, enum act_kind act)
{
	cuda_bn_forward(y, x, mean, var, gamma, beta, rows, cols, eps, a, act, stream_of(be));
}

static void cu_bn_backward_sums(const struct backend *be, float *sums, const float *dy,
				const float *x, const float *mean, const float *var, int rows,
				int cols, float eps, const float *z, enum act_kind act)
{
	cuda_bn_backward_sums(sums, dy, x, mean, var, rows, cols, eps, z, act, stream_of(be));
}

static void cu_bn_backward(const struct backend *be, float *dx, const float *dy, const float *x,
			   const float *mean, const float *var, const float *gamma,
			   const float *sums, int rows, int cols, float eps, float inv_n,
			   const float *z, enum act_kind act)
{
	cuda_bn_backward(dx, dy, x, mean, var, gamma, sums, rows, cols, eps, inv_n, z, act,
			 stream_of(be));
}

static void cu_add(const struct backend *be, float *y, const float *a, const float *b,
		   size_t n, float *out, enum act_kind act)
{
	cuda_add(y, a, b, n, out, act, stream_of(be));
}

static void cu_scale(const struct backend *be, float *x, size_t n, float alpha)
{
	cuda_scale(x, n, alpha, stream_of(be));
}

static void cu_bias_grad(const struct backend *be, float *dbias, const float *dz, int rows,
			 int cols)
{
	cuda_bias_grad(dbias, dz, rows, cols, stream_of(be));
}

/* The attention's products: cu_matmul's operands swapped, each matrix
 * with the contract's leading dimension and stride, one cuBLAS call for
 * the batch. */
static void cu_matmul_batched(const struct backend *be, float *c, const float *a,
			      const float *b, int m, int n, int k, int ta, int tb, float beta,
			      int batch, int lda, int ldb, int ldc, size_t sa, size_t sb, size_t sc)
{
	const struct cuda_ctx *x = ctx_of(be);
	const float alpha = 1.0f;
	if (batch <= 0)
		return;
	CUBLAS_CHECK(cublasGemmStridedBatchedEx(
		x->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
		&alpha, b, CUDA_R_32F, ldb, (long long)sb, a, CUDA_R_32F, lda, (long long)sa, &beta,
		c, CUDA_R_32F, ldc, (long long)sc, batch, x->compute, CUBLAS_GEMM_DEFAULT));
}

static void cu_softmax(const struct backend *be, float *y, const float *x, int rows, int cols,
		       float scale, int causal)
{
	cuda_softmax(y, x, rows, cols, scale, causal, stream_of(be));
}

static void cu_softmax_backward(const struct backend *be, float *dx, const float *dy,
				const float *y, int rows, int cols, float scale)
{
	cuda_softmax_backward(dx, dy, y, rows, cols, scale, stream_of(be));
}

static void cu_ln_forward(const struct backend *be, float *y, float *mean, float *rstd,
			  const float *x, const float *gamma, const float *beta, int rows,
			  int cols, float eps)
{
	cuda_ln_forward(y, mean, rstd, x, gamma, beta, rows, cols, eps, stream_of(be));
}

static void cu_ln_backward(const struct backend *be, float *dx, float *dgamma, float *dbeta,
			   const float *dy, const float *x, const float *mean, const float *rstd,
			   const float *gamma, int rows, int cols)
{
	cuda_ln_backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, rows, cols, stream_of(be));
}

static void cu_embed(const struct backend *be, float *y, const float *ids, const float *table,
		     int n, int cols, int vocab)
{
	cuda_embed(y, ids, table, n, cols, vocab, stream_of(be));
}

static void cu_embed_backward(const struct backend *be, float *dtable, const float *dy,
			      const float *ids, int n, int cols, int vocab, int add)
{
	cuda_embed_backward(dtable, dy, ids, n, cols, vocab, add, stream_of(be));
}

static void cu_xent(const struct backend *be, float *dlogits, float *stats, const float *logits,
		    const int32_t *labels, int rows, int classes, float scale)
{
	cuda_xent(dlogits, stats, logits, labels, rows, classes, scale, stream_of(be));
}

static void cu_optim_update(const struct backend *be, float *w, const float *g, float *s1,
			    float *s2, size_t n, const struct optim_hp *hp)
{
	cuda_optim_update(w, g, s1, s2, n, hp, stream_of(be));
}

static void cu_ema_update(const struct backend *be, float *shadow, const float *w, size_t n,
			  float decay)
{
	cuda_ema_update(shadow, w, n, decay, stream_of(be));
}

static int cu_nonfinite(const struct backend *be, const float *x, size_t n)
{
	struct cuda_ctx *c = ctx_of(be);
	unsigned bad = 0;
	cuda_nonfinite(c->flag, x, n, c->stream);
	CUDA_CHECK(cudaMemcpyAsync(&bad, c->flag, sizeof(bad), cudaMemcpyDeviceToHost, c->stream));
	CUDA_CHECK(cudaStreamSynchronize(c->stream));
	return bad != 0;
}

static double cu_sumsq(const struct backend *be, const float *x, size_t n)
{
	struct cuda_ctx *c = ctx_of(be);
	double part[CUDA_SUMSQ_PARTS], sum = 0.0;
	cuda_sumsq_parts(c->parts, x, n, c->stream);
	CUDA_CHECK(cudaMemcpyAsync(part, c->parts, sizeof(part), cudaMemcpyDeviceToHost, c->stream));
	CUDA_CHECK(cudaStreamSynchronize(c->stream));
	for (int i = 0; i < CUDA_SUMSQ_PARTS; i++)
		sum += part[i];
	return sum;
}

static void cu_synchronize(const struct backend *be)
{
	CUDA_CHECK(cudaStreamSynchronize(stream_of(be)));
}

static void *cu_stream(const struct backend *be) { return stream_of(be); }

static int cu_set_precision(const struct backend *be, enum precision p)
{
	ctx_of(be)->compute =
		p == PRECISION_BF16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F;
	return 0;
}

static int cu_device_id(const struct backend *be, char *buf, int len)
{
	CUDA_CHECK(cudaDeviceGetPCIBusId(buf, len, ctx_of(be)->device));
	return 0;
}

/* Releases the stream, the cuBLAS handle and its workspace; error lines
 * stop naming this GPU. */
static void cu_close(const struct backend *be)
{
	struct cuda_ctx *x = ctx_of(be);
	CUDA_CHECK(cudaStreamSynchronize(x->stream));
	CUBLAS_CHECK(cublasDestroy(x->blas));
	CUDA_CHECK(cudaFree(x->workspace));
	CUDA_CHECK(cudaFree(x->flag));
	CUDA_CHECK(cudaFree(x->parts));
	CUDA_CHECK(cudaStreamDestroy(x->stream));
	log_set_device(-1);
	free(x);
	free((void *)be);
}

/* Designated, in declaration order (C++20): a misplaced op does not compile. */
static const struct backend cuda_table = {
	.name = "cuda",
	.memory = BACKEND_CUDA,
	.ctx = NULL,
	.cols_budget = 0,
	.alloc = cu_alloc,
	.free = cu_free,
	.copy_in = cu_copy_in,
	.copy_out = cu_copy_out,
	.copy = cu_copy,
	.alloc_host = cu_alloc_host,
	.free_host = cu_free_host,
	.copy_in_async = cu_copy_in_async,
	.matmul = cu_matmul,
	.bias_act = cu_bias_act,
	.act_backward = cu_act_backward,
	.act_forward = cu_act_forward,
	.dropout = cu_dropout,
	.im2col = cu_im2col,
	.col2im = cu_col2im,
	/* conv2d as im2col, cuBLAS and col2im (cuDNN's kernels: not yet) */
	.conv = NULL,
	.conv_backward_data = NULL,
	.conv_backward_weights = NULL,
	.conv_kernels = NULL,
	.matmul_kernels = NULL,
	.pool = cu_pool,
	.pool_backward = cu_pool_backward,
	.col_moment = cu_col_moment,
	.bn_forward = cu_bn_forward,
	.bn_train_forward = NULL, /* col_moment twice, bn_forward (cuDNN's: not yet) */
	.bn_backward_sums = cu_bn_backward_sums,
	.bn_backward = cu_bn_backward,
	.add = cu_add,
	.scale = cu_scale,
	.bias_grad = cu_bias_grad,
	.matmul_batched = cu_matmul_batched,
	.matmul_heads = NULL, /* the attention layer calls matmul_batched a head */
	.attn_forward = NULL, /* the attention layer composes the heads */
	.attn_backward = NULL,
	.softmax = cu_softmax,
	.softmax_backward = cu_softmax_backward,
	.ln_forward = cu_ln_forward,
	.ln_backward = cu_ln_backward,
	.embed = cu_embed,
	.embed_backward = cu_embed_backward,
	.xent = cu_xent,
	.optim_update = cu_optim_update,
	.ema_update = cu_ema_update,
	.nonfinite = cu_nonfinite,
	.sumsq = cu_sumsq,
	.synchronize = cu_synchronize,
	.stream = cu_stream,
	.set_precision = cu_set_precision,
	.device_id = cu_device_id,
	.close = cu_close,
};

extern "C" int backend_cuda_devices(void)
{
	int count = 0;
	return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

/* The GPU this rank should use: its ordinal, or -1 with *why (and *fatal
 * when a GPU is there but unusable). */
static int pick_device(int local_rank, const char **why, int *fatal)
{
	static char reason[256];
	int count = 0;
	cudaError_t rc = cudaGetDeviceCount(&count);
	/* No device, or no driver at all (the runtime then finds none that is
	 * recent enough): this rank has no GPU. */
	if (rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver ||
	    (rc == cudaSuccess && count == 0)) {
		snprintf(reason, sizeof(reason), "no GPU visible to this rank (%s)",
			 rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
		*why = reason;
		return -1;
	}
	/* A GPU that is there but cannot be used (a driver fault, a device
	 * another process holds in exclusive mode) is an error, not a reason to
	 * fall back to the CPU unnoticed. cudaFree(0) creates the context. */
	int device = count == 1 ? 0 : local_rank % (count ? count : 1);
	if (rc == cudaSuccess)
		rc = cudaSetDevice(device);
	if (rc == cudaSuccess)
		rc = cudaFree(0);
	if (rc != cudaSuccess) {
		snprintf(reason, sizeof(reason), "a GPU is there but cannot be used (%s)",
			 cudaGetErrorString(rc));
		*why = reason;
		*fatal = 1;
		return -1;
	}
	return device;
}

extern "C" const struct backend *backend_cuda_open(int local_rank, int local_size,
						     const char **why, int *fatal)
{
	*fatal = 0;
	int device = pick_device(local_rank, why, fatal);
	if (device < 0)
		return NULL;
	struct cuda_ctx *x = (struct cuda_ctx *)xcalloc(1, sizeof(*x));
	x->device = device;
	log_set_device(device);
	CUDA_CHECK(cudaStreamCreateWithFlags(&x->stream, cudaStreamNonBlocking));
	CUBLAS_CHECK(cublasCreate(&x->blas));
	CUBLAS_CHECK(cublasSetStream(x->blas, x->stream));
	/* cuBLAS's workspace, taken now like all device memory rather than on
	 * the first product (32 MiB, NVIDIA's figure for Hopper). */
	CUDA_CHECK(cudaMalloc(&x->workspace, CUBLAS_WORKSPACE_BYTES));
	CUBLAS_CHECK(cublasSetWorkspace(x->blas, x->workspace, CUBLAS_WORKSPACE_BYTES));
	CUDA_CHECK(cudaMalloc(&x->flag, sizeof(*x->flag)));
	CUDA_CHECK(cudaMalloc(&x->parts, CUDA_SUMSQ_PARTS * sizeof(*x->parts)));
	/* Default math: fp32 products stay fp32 (TF32 only when asked for). */
	CUBLAS_CHECK(cublasSetMathMode(x->blas, CUBLAS_DEFAULT_MATH));
	x->compute = CUBLAS_COMPUTE_32F;
	struct backend *be = (struct backend *)xmalloc(sizeof(*be));
	*be = cuda_table;
	be->ctx = x;
	return be;
}
