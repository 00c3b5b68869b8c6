/* bf16 rounding of products' operands, and the CPU table's conv2d ops
 * (backend_cpu_bf16.h). */
#include "backend_cpu_bf16.h"

#include "backend_cpu_dnnl.h"

#include "backend_cpu_seq.h" /* CPU_WIDE */
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int cpu_bf16;

static struct {
	float *p;
	size_t n;
} scratch[2];

CPU_WIDE static void round_loop(uint32_t *restrict out, const uint32_t *restrict in, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u = in[i], nan = (u & 0x7fffffffu) > 0x7f800000u;
		uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
		out[i] = nan ? (u | 0x00400000u) & 0xffff0000u : r; /* a quiet NaN */
	}
}

const float *cpu_bf16_round(int slot, const float *x, size_t n)
{
	if (scratch[slot].n < n) {
		free(scratch[slot].p);
		scratch[slot].p = aligned_alloc(64, (n + 15) / 16 * 64);
		ALLOC_CHECK(scratch[slot].p);
		scratch[slot].n = n;
	}
	uint32_t *out = (uint32_t *)scratch[slot].p;
	const uint32_t *in = (const uint32_t *)(const void *)x;
	round_loop(out, in, n);
	return scratch[slot].p;
}

int cpu_bf16_native(void) { return cpu_bf16 && cpu_dnnl_has_bf16(); }

void cpu_conv2d(const struct backend *be, float *y, const float *x, const float *kernel,
		const float *bias, int rows, const struct window *w, int f)
{
	if (cpu_bf16 && !cpu_bf16_native()) {
		x = cpu_bf16_round(0, x, (size_t)rows * w->h * w->w * w->c);
		kernel = cpu_bf16_round(1, kernel, (size_t)w->kh * w->kw * w->c * f);
	}
	cpu_conv(be, y, x, kernel, bias, rows, w, f, cpu_bf16_native());
}

void cpu_conv2d_backward_data(const struct backend *be, float *dx, const float *dy,
			      const float *kernel, int rows, const struct window *w, int f)
{
	if (cpu_bf16 && !cpu_bf16_native()) {
		dy = cpu_bf16_round(0, dy, (size_t)rows * w->oh * w->ow * f);
		kernel = cpu_bf16_round(1, kernel, (size_t)w->kh * w->kw * w->c * f);
	}
	cpu_conv_backward_data(be, dx, dy, kernel, rows, w, f, cpu_bf16_native());
}

void cpu_conv2d_backward_weights(const struct backend *be, float *dkernel, float *dbias,
				 const float *x, const float *dy, int rows,
				 const struct window *w, int f)
{
	if (!cpu_bf16) {
		cpu_conv_backward_weights(be, dkernel, dbias, x, dy, rows, w, f, 0);
		return;
	}
	/* the bias's gradient is a sum, not a product: of dy as it is */
	if (cpu_bf16_native()) {
		cpu_conv_backward_weights(be, dkernel, NULL, x, dy, rows, w, f, 1);
	} else {
		const float *r = cpu_bf16_round(1, dy, (size_t)rows * w->oh * w->ow * f);
		x = cpu_bf16_round(0, x, (size_t)rows * w->h * w->w * w->c);
		cpu_conv_backward_weights(be, dkernel, dbias, x, r, rows, w, f, 0);
	}
	be->bias_grad(be, dbias, dy, rows * w->oh * w->ow, f);
}
