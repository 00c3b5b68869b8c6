/* The CUDA backend: backend.h on one GPU per rank. Device memory from plain
 * cudaMalloc, all taken at start-up; cuBLAS for matrix products (fp32 with
 * TF32 off, or bf16 inputs with fp32 accumulation for --precision bf16);
 * the kernels of elementwise.cu and reduce.cu for the rest; everything on
 * one compute stream, which a device communicator orders itself against. */
#include "cuda_check.h"
#include "kernels.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

#define CUBLAS_WORKSPACE_BYTES ((size_t)32 << 20)

static struct {
	int device;            /* ordinal this rank uses, e.g. 0 */
	cudaStream_t stream;   /* compute stream */
	cublasHandle_t blas;
	cublasComputeType_t compute; /* CUBLAS_COMPUTE_32F or ..._FAST_16BF */
} g;

static void *cu_alloc(size_t bytes)
{
	void *p = NULL;
	CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
	CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, g.stream));
	CUDA_CHECK(cudaStreamSynchronize(g.stream));
	return p;
}

static void cu_free(void *p)
{
	if (p)
		CUDA_CHECK(cudaFree(p));
}

/* The interface lets the caller reuse src at once, and an asynchronous copy
 * from pageable memory only might have staged it on return: wait. Each
 * step's host already waits on its all-reduce, so this costs little. */
static void cu_copy_in(void *dst, const void *src, size_t bytes)
{
	CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g.stream));
	CUDA_CHECK(cudaStreamSynchronize(g.stream));
}

static void *cu_alloc_host(size_t bytes)
{
	void *p = NULL;
	CUDA_CHECK(cudaMallocHost(&p, bytes ? bytes : 1));
	memset(p, 0, bytes);
	return p;
}

static void cu_free_host(void *p)
{
	if (p)
		CUDA_CHECK(cudaFreeHost(p));
}

/* From pinned memory: truly asynchronous, ordered on the compute stream. */
static void cu_copy_in_async(void *dst, const void *src, size_t bytes)
{
	CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g.stream));
}

static void cu_copy_out(void *dst, const void *src, size_t bytes)
{
	CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g.stream));
	CUDA_CHECK(cudaStreamSynchronize(g.stream));
}

static void cu_copy(void *dst, const void *src, size_t bytes)
{
	if (dst != src)
		CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, g.stream));
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the
 * operands, keep the leading dimensions of the CPU twin. */
static void cu_matmul(float *c, const float *a, const float *b, int m, int n, int k, int ta,
		      int tb, float beta)
{
	const float alpha = 1.0f;
	CUBLAS_CHECK(cublasGemmEx(g.blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
				  ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_32F,
				  tb ? k : n, a, CUDA_R_32F, ta ? m : k, &beta, c, CUDA_R_32F, n,
				  g.compute, CUBLAS_GEMM_DEFAULT));
}

static void cu_bias_act(float *a, float *z, const float *bias, int rows, int cols,
			enum act_kind act)
{
	cuda_bias_act(a, z, bias, rows, cols, act, g.stream);
}

static void cu_act_backward(float *dz, const float *da, const float *z, size_t n,
			    enum act_kind act)
{
	cuda_act_backward(dz, da, z, n, act, g.stream);
}

static void cu_bias_grad(float *dbias, const float *dz, int rows, int cols)
{
	cuda_bias_grad(dbias, dz, rows, cols, g.stream);
}

static void cu_xent(float *dlogits, float *stats, const float *logits, const int32_t *labels,
		    int rows, int classes, float scale)
{
	cuda_xent(dlogits, stats, logits, labels, rows, classes, scale, g.stream);
}

static void cu_optim_update(float *w, const float *g_, float *s1, float *s2, size_t n,
			    const struct optim_hp *hp)
{
	cuda_optim_update(w, g_, s1, s2, n, hp, g.stream);
}

static void cu_ema_update(float *shadow, const float *w, size_t n, float decay)
{
	cuda_ema_update(shadow, w, n, decay, g.stream);
}

static void cu_synchronize(void)
{
	CUDA_CHECK(cudaStreamSynchronize(g.stream));
}

static void *cu_stream(void) { return g.stream; }

static int cu_set_precision(enum precision p)
{
	g.compute = p == PRECISION_BF16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F;
	return 0;
}

static int cu_device_id(char *buf, int len)
{
	CUDA_CHECK(cudaDeviceGetPCIBusId(buf, len, g.device));
	return 0;
}

static struct backend cuda_table = {
	"cuda",
	cu_alloc,
	cu_free,
	cu_copy_in,
	cu_copy_out,
	cu_copy,
	cu_alloc_host,
	cu_free_host,
	cu_copy_in_async,
	cu_matmul,
	cu_bias_act,
	cu_act_backward,
	cu_bias_grad,
	cu_xent,
	cu_optim_update,
	cu_ema_update,
	cu_synchronize,
	cu_stream,
	cu_set_precision,
	cu_device_id,
};

extern "C" int backend_cuda_devices(void)
{
	int count = 0;
	return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

extern "C" const struct backend *backend_cuda_open(int local_rank, int local_size,
						     const char **why, int *fatal)
{
	static char reason[256];
	static int opened;
	*fatal = 0;
	if (opened)
		return &cuda_table;
	int count = 0;
	cudaError_t rc = cudaGetDeviceCount(&count);
	/* No device, or no driver at all (the runtime then finds none that is
	 * recent enough): this rank has no GPU. */
	if (rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver ||
	    (rc == cudaSuccess && count == 0)) {
		snprintf(reason, sizeof(reason), "no GPU visible to this rank (%s)",
			 rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
		*why = reason;
		return NULL;
	}
	/* A GPU that is there but cannot be used (a driver fault, a device
	 * another process holds in exclusive mode) is an error, not a reason to
	 * fall back to the CPU unnoticed. cudaFree(0) creates the context. */
	if (rc == cudaSuccess) {
		g.device = count == 1 ? 0 : local_rank % count;
		rc = cudaSetDevice(g.device);
		if (rc == cudaSuccess)
			rc = cudaFree(0);
	}
	if (rc != cudaSuccess) {
		snprintf(reason, sizeof(reason), "a GPU is there but cannot be used (%s)",
			 cudaGetErrorString(rc));
		*why = reason;
		*fatal = 1;
		return NULL;
	}
	log_set_device(g.device);
	CUDA_CHECK(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
	CUBLAS_CHECK(cublasCreate(&g.blas));
	CUBLAS_CHECK(cublasSetStream(g.blas, g.stream));
	/* cuBLAS's workspace, taken now like all device memory rather than on
	 * the first product (32 MiB, NVIDIA's figure for Hopper). */
	void *workspace = NULL;
	CUDA_CHECK(cudaMalloc(&workspace, CUBLAS_WORKSPACE_BYTES));
	CUBLAS_CHECK(cublasSetWorkspace(g.blas, workspace, CUBLAS_WORKSPACE_BYTES));
	/* Default math: fp32 products stay fp32 (TF32 only when asked for). */
	CUBLAS_CHECK(cublasSetMathMode(g.blas, CUBLAS_DEFAULT_MATH));
	g.compute = CUBLAS_COMPUTE_32F;
	opened = 1;
	return &cuda_table;
}
