/* The CPU backend's kernels by oneDNN: convolutions, batch
 * normalization's forward, matrix products (backend_cpu_dnnl*.c, the only
 * files that include oneDNN's headers), for backend_cpu.c's table and its
 * bf16 wrappers (backend_cpu_bf16.h). The conv2d ops have their struct
 * backend slots' signatures (backend.h) and bf16: 1 multiplies bf16
 * copies of the operands (cpu_dnnl_has_bf16 must say so), 0 fp32; in
 * bf16 backward-weights leaves the bias's gradient to the caller. */
#pragma once
#include "backend.h"

#include <stddef.h>

void cpu_conv(const struct backend *be, float *y, const float *x, const float *kernel,
	      const float *bias, int rows, const struct window *w, int filters, int bf16);
void cpu_conv_backward_data(const struct backend *be, float *dx, const float *dy,
			    const float *kernel, int rows, const struct window *w, int filters,
			    int bf16);
void cpu_conv_backward_weights(const struct backend *be, float *dkernel, float *dbias,
			       const float *x, const float *dy, int rows, const struct window *w,
			       int filters, int bf16);
void cpu_bn_train_forward(const struct backend *be, float *y, float *mean, float *var,
			  const float *x, const float *gamma, const float *beta, int rows,
			  int cols, float eps, float *a, enum act_kind act);
/* c = op(a) @ op(b) + beta c, one product (bt NULL) or a batch over rows
 * and heads (backend.h's matmul_heads; heads 1: matmul_batched's); in
 * bf16 the operands are rounded to bf16 (nearest even) and multiplied
 * with fp32 sums. */
void cpu_dnnl_matmul(float *c, const float *a, const float *b, int m, int n, int k, int ta,
		     int tb, float beta, int lda, int ldb, int ldc, const struct batch2 *bt, int bf16);
/* c (m, n) = op(a) @ op(b) + beta c, row-major and packed, in fp32 by
 * oneDNN's sgemm. */
void cpu_dnnl_sgemm(float *c, const float *a, const float *b, int m, int n, int k, int ta, int tb,
		    float beta);
/* Whether oneDNN's sgemm is the CPU table's fp32 product here: on CPUs
 * with AVX-512 (avx512_core), where it measured 7 to 22% faster than
 * OpenBLAS's on the dense layers' shapes (docs/speed.md); on AVX2 the two
 * were equal and OpenBLAS stays. */
int cpu_dnnl_sgemm_wins(void);
/* Whether oneDNN multiplies bf16 itself on this CPU (avx512_core_bf16). */
int cpu_dnnl_has_bf16(void);
/* "oneDNN 2.6.3, avx2": the library's version and the instruction set its
 * kernels use on this CPU; a static string. */
const char *cpu_dnnl_kernels(void);
/* The OpenMP threads oneDNN's kernels run on (1 until set), from the
 * calling thread on. */
void cpu_dnnl_threads(int n);
/* Releases the primitives kept for each shape, and the engine (the next
 * call makes them again). */
void cpu_dnnl_release(void);
