/* The CPU backend's matrix products (backend_cpu_mm.c), with their struct
 * backend slots' signatures (backend.h): the table's (cpu_matmul*: under
 * --precision bf16 oneDNN's bf16 kernels where the CPU has them) and
 * mtrain's own (*_own: OpenBLAS and the small path, the operands rounded
 * under bf16), which backend_cpu_own's table takes. */
#pragma once
#include "backend.h"

#include <stddef.h>

void cpu_matmul(const struct backend *be, float *c, const float *a, const float *b, int m, int n,
		int k, int ta, int tb, float beta);
void cpu_matmul_batched(const struct backend *be, float *c, const float *a, const float *b, int m,
			int n, int k, int ta, int tb, float beta, int batch, int lda, int ldb,
			int ldc, size_t sa, size_t sb, size_t sc);
void cpu_matmul_heads(const struct backend *be, float *c, const float *a, const float *b, int m,
		      int n, int k, int ta, int tb, float beta, int lda, int ldb, int ldc,
		      const struct batch2 *bt);
void cpu_matmul_own(const struct backend *be, float *c, const float *a, const float *b, int m,
		    int n, int k, int ta, int tb, float beta);
void cpu_matmul_batched_own(const struct backend *be, float *c, const float *a, const float *b,
			    int m, int n, int k, int ta, int tb, float beta, int batch, int lda,
			    int ldb, int ldc, size_t sa, size_t sb, size_t sc);
/* "oneDNN sgemm" or "OpenBLAS": what the table's fp32 matmul runs on
 * (NULL under bf16, whose products the conv2d text names). */
const char *cpu_matmul_kernels(void);
