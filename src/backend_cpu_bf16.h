/* bf16 products on the CPU (--precision bf16) where oneDNN has no bf16
 * kernels (a CPU without AVX512_BF16, with --force-bf16; or
 * --cpu-kernels own): a product's operands are rounded to bf16 and then
 * multiplied by the fp32 kernels. A product of two bf16 values is exact in
 * fp32 (8 significant bits each), so this computes what bf16 products
 * with fp32 accumulation compute (AVX512_BF16's vdpbf16ps, CUDA's tensor
 * cores), to the order of the sums; its speed is fp32's less the
 * rounding. Where oneDNN has them, its bf16 kernels run instead
 * (backend_cpu_dnnl.h). Defined in backend_cpu_bf16.c. */
#pragma once
#include "backend.h"

#include <stddef.h>

/* Set while --precision bf16 (the CPU backend's set_precision). */
extern int cpu_bf16;
/* Whether bf16's products run on oneDNN's bf16 kernels now (cpu_bf16 on a
 * CPU where oneDNN has them), not by the rounding below. */
int cpu_bf16_native(void);

/* x (n) rounded to bf16 (to nearest, ties to even, the float's low 16 bits
 * cleared; NaN and infinities kept) into scratch slot (0 or 1), which the
 * next call with that slot reuses. */
const float *cpu_bf16_round(int slot, const float *x, size_t n);
/* The CPU table's conv2d ops: oneDNN's (backend_cpu_dnnl.h), under
 * cpu_bf16 in its bf16 kernels where it has them, else their operands
 * rounded (the bias's gradient, a sum, from dy as it is, either way).
 * Same signatures as their struct backend slots. */
void cpu_conv2d(const struct backend *be, float *y, const float *x, const float *kernel,
		const float *bias, int rows, const struct window *w, int f);
void cpu_conv2d_backward_data(const struct backend *be, float *dx, const float *dy,
			      const float *kernel, int rows, const struct window *w, int f);
void cpu_conv2d_backward_weights(const struct backend *be, float *dkernel, float *dbias,
				 const float *x, const float *dy, int rows, const struct window *w,
				 int f);
