/* The CPU backend's matrix products (backend_cpu_mm.h): OpenBLAS sgemm,
 * attention's small per-head products (backend_cpu_small.c), and under
 * --precision bf16 oneDNN's bf16 kernels where the CPU has them, else the
 * operands rounded for the fp32 kernels (backend_cpu_bf16.h). */
#include "backend_cpu_mm.h"

#include "backend_cpu_bf16.h"
#include "backend_cpu_dnnl.h"
#include "backend_cpu_small.h"

#include <cblas.h>
#include <string.h>

/* OpenBLAS scales c by beta in a pass of its own before the product, one
 * float at a time (its sgemm_beta), zeroing included: a tenth of the ViT's
 * step. A c to be overwritten is cleared here instead (memset, line by
 * line) and the product added to it (beta 1: no such pass); the same bits,
 * 0 + x being x. */
static void blas_matmul_batched(float *c, const float *a, const float *b, int m, int n, int k,
				int ta, int tb, float beta, int batch, int lda, int ldb, int ldc,
				size_t sa, size_t sb, size_t sc)
{
	if (beta == 0.0f) {
		for (int i = 0; i < batch; i++) {
			float *ci = c + (size_t)i * sc;
			if (ldc == n)
				memset(ci, 0, (size_t)m * n * sizeof(float));
			else
				for (int r = 0; r < m; r++)
					memset(ci + (size_t)r * ldc, 0, (size_t)n * sizeof(float));
		}
		beta = 1.0f;
	}
	for (int i = 0; i < batch; i++)
		cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
			    tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a + (size_t)i * sa, lda,
			    b + (size_t)i * sb, ldb, beta, c + (size_t)i * sc, ldc);
}

/* The batched products are attention's per-head ones: those within
 * cpu_small_fits (the ViT's, a GPT's of short contexts, b not transposed) go to the small
 * path, a fixed choice by shape, so that a row's result never depends on
 * the batch it came in; the larger ones to OpenBLAS. Under
 * --precision bf16 the operands are rounded first (backend_cpu_bf16.h). */
void cpu_matmul_batched_own(const struct backend *be, float *c, const float *a, const float *b,
			    int m, int n, int k, int ta, int tb, float beta, int batch, int lda,
			    int ldb, int ldc, size_t sa, size_t sb, size_t sc)
{
	if (cpu_bf16) {
		a = cpu_bf16_round(0, a, batch2_span(batch, 1, sa, 0, ta ? k : m, ta ? m : k, lda));
		b = cpu_bf16_round(1, b, batch2_span(batch, 1, sb, 0, tb ? n : k, tb ? k : n, ldb));
	}
	if ((beta == 0.0f || beta == 1.0f) && cpu_small_fits(m, n, k, tb)) {
		for (int i = 0; i < batch; i++)
			cpu_small_matmul(c + (size_t)i * sc, a + (size_t)i * sa, b + (size_t)i * sb,
					 m, n, k, ta, beta == 1.0f, lda, ldb, ldc);
		return;
	}
	blas_matmul_batched(c, a, b, m, n, k, ta, tb, beta, batch, lda, ldb, ldc, sa, sb, sc);
}

void cpu_matmul_own(const struct backend *be, float *c, const float *a, const float *b, int m,
		    int n, int k, int ta, int tb, float beta)
{
	int lda = ta ? m : k, ldb = tb ? k : n;
	if (cpu_bf16) {
		a = cpu_bf16_round(0, a, (size_t)m * k);
		b = cpu_bf16_round(1, b, (size_t)k * n);
	}
	blas_matmul_batched(c, a, b, m, n, k, ta, tb, beta, 1, lda, ldb, n, 0, 0, 0);
}

/* The table's products: oneDNN's bf16 kernels under --precision bf16 where
 * the CPU has them (cpu_bf16_native; attention's heads all at once, each
 * operand converted once); in fp32 one product (dense's) by oneDNN's sgemm
 * where it wins (cpu_dnnl_sgemm_wins: AVX-512); else mtrain's (OpenBLAS's,
 * the small path's). */
void cpu_matmul_batched(const struct backend *be, float *c, const float *a, const float *b, int m,
			int n, int k, int ta, int tb, float beta, int batch, int lda, int ldb,
			int ldc, size_t sa, size_t sb, size_t sc)
{
	if (cpu_bf16_native())
		cpu_dnnl_matmul(c, a, b, m, n, k, ta, tb, beta, lda, ldb, ldc,
				&(struct batch2){batch, 1, sa, sb, sc, 0, 0, 0}, 1);
	else
		cpu_matmul_batched_own(be, c, a, b, m, n, k, ta, tb, beta, batch, lda, ldb, ldc, sa,
				       sb, sc);
}

void cpu_matmul_heads(const struct backend *be, float *c, const float *a, const float *b, int m,
		      int n, int k, int ta, int tb, float beta, int lda, int ldb, int ldc,
		      const struct batch2 *bt)
{
	if (cpu_bf16_native()) {
		cpu_dnnl_matmul(c, a, b, m, n, k, ta, tb, beta, lda, ldb, ldc, bt, 1);
		return;
	}
	for (int h = 0; h < bt->heads; h++)
		cpu_matmul_batched_own(be, c + h * bt->hc, a + h * bt->ha, b + h * bt->hb, m, n, k,
				       ta, tb, beta, bt->rows, lda, ldb, ldc, bt->sa, bt->sb, bt->sc);
}

void cpu_matmul(const struct backend *be, float *c, const float *a, const float *b, int m, int n,
		int k, int ta, int tb, float beta)
{
	if (cpu_bf16_native())
		cpu_dnnl_matmul(c, a, b, m, n, k, ta, tb, beta, ta ? m : k, tb ? k : n, n, NULL, 1);
	else if (!cpu_bf16 && cpu_dnnl_sgemm_wins())
		cpu_dnnl_sgemm(c, a, b, m, n, k, ta, tb, beta);
	else
		cpu_matmul_own(be, c, a, b, m, n, k, ta, tb, beta);
}

const char *cpu_matmul_kernels(void)
{
	return cpu_bf16 ? NULL : cpu_dnnl_sgemm_wins() ? "oneDNN sgemm" : "OpenBLAS";
}
