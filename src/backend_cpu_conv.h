/* The CPU backend's window ops (conv2d's im2col and col2im, pooling),
 * defined in backend_cpu_conv.c and registered in backend_cpu.c's table.
 * Same signatures as their struct backend slots (backend.h). */
#pragma once
#include "backend.h"

void cpu_im2col(const struct backend *be, float *cols, const float *x, int rows,
		const struct window *w);
void cpu_col2im(const struct backend *be, float *dx, const float *cols, int rows,
		const struct window *w);
void cpu_pool(const struct backend *be, float *y, const float *x, int rows,
	      const struct window *w, int max);
void cpu_pool_backward(const struct backend *be, float *dx, const float *dy, const float *x,
		       int rows, const struct window *w, int max);
