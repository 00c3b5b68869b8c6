/* The CPU backend's convolutions and batch normalization by oneDNN
 * (backend_cpu_dnnl.c, the only file that includes oneDNN's headers),
 * registered in backend_cpu.c's table. Same signatures as their struct
 * backend slots (backend.h). */
#pragma once
#include "backend.h"

void cpu_conv(const struct backend *be, float *y, const float *x, const float *kernel,
	      const float *bias, int rows, const struct window *w, int filters);
void cpu_conv_backward_data(const struct backend *be, float *dx, const float *dy,
			    const float *kernel, int rows, const struct window *w, int filters);
void cpu_conv_backward_weights(const struct backend *be, float *dkernel, float *dbias,
			       const float *x, const float *dy, int rows, const struct window *w,
			       int filters);
void cpu_bn_train_forward(const struct backend *be, float *y, float *mean, float *var,
			  const float *x, const float *gamma, const float *beta, int rows,
			  int cols, float eps, float *a, enum act_kind act);
/* "oneDNN 2.6.3, avx2": the library's version and the instruction set its
 * kernels use on this CPU; a static string. */
const char *cpu_conv_kernels(void);
/* The OpenMP threads oneDNN's kernels run on (1 until set), from the
 * calling thread on. */
void cpu_conv_threads(int n);
/* Releases the primitives kept for each shape (the next call makes them
 * again). */
void cpu_conv_release(void);
