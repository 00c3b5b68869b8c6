/* conv2d by oneDNN's direct kernels (backend_cpu_dnnl.h).
 *
 * Each shape (rows, window, filters, fp32 or bf16) gets its forward,
 * backward-data and backward-weights primitives once, kept for the run.
 * Activations stay in mtrain's NHWC; the kernel, Keras' [kh, kw, in, out],
 * is reordered into the blocked layout oneDNN's kernels take (a few KiB,
 * at each call, since the weights change every step), and its gradient
 * reordered back. In bf16 the products' operands (x, dy, the kernel) are
 * converted to bf16 copies by oneDNN's reorders (to nearest even), the
 * results (y, dx, the kernel's gradient) are fp32. */
#include "backend_cpu_dnnl.h"
#include "backend_cpu_dnnl_int.h"

#include <stdlib.h>
#include <string.h>

/* One shape's primitives, and the memory objects they run on: the user's
 * buffers (handles set at each call), the kernel in oneDNN's layouts and,
 * in bf16, the bf16 copies of x and dy. */
struct conv_shape {
	int rows, filters, bf16;
	struct window w;
	dnnl_primitive_t fwd, bwd_data, bwd_weights;
	/* kernel (Keras' layout) -> forward's and backward-data's layouts,
	 * and backward-weights' gradient -> Keras' layout; x and dy to their
	 * bf16 copies; NULL where a layout is the user's own */
	dnnl_primitive_t to_fwd, to_bwd, from_diff, to_x, to_dy;
	dnnl_memory_t x, y, dx, bias, kernel, kernel_fwd, kernel_bwd, diff_kernel, dkernel, dbias;
	dnnl_memory_t x16, dy16; /* bf16's copies; x and y in fp32 */
	const float *dy16_of; /* the dy backward-weights left in dy16, for backward-data */
};

static struct {
	struct conv_shape **shape;
	int n, cap;
} g;

static void conv_release(void);

static struct conv_shape *conv_make(int rows, const struct window *w, int filters, int bf16)
{
	struct conv_shape *s = calloc(1, sizeof(*s));
	ALLOC_CHECK(s);
	s->rows = rows;
	s->filters = filters;
	s->w = *w;
	s->bf16 = bf16;
	/* oneDNN's dims are logical (N, C, H, W and O, I, H, W); the tags give
	 * mtrain's layouts. Padding after the image: what the output needs
	 * past the padding before, 0 where 'valid' leaves input unread. */
	dnnl_dims_t xd = {rows, w->c, w->h, w->w}, kd = {filters, w->c, w->kh, w->kw},
		    bd = {filters}, yd = {rows, filters, w->oh, w->ow};
	int pb = (w->oh - 1) * w->sh + w->kh - w->h - w->pt,
	    pr = (w->ow - 1) * w->sw + w->kw - w->w - w->pl;
	dnnl_dims_t strides = {w->sh, w->sw}, before = {w->pt, w->pl},
		    after = {pb > 0 ? pb : 0, pr > 0 ? pr : 0};
	dnnl_data_type_t t = bf16 ? dnnl_bf16 : dnnl_f32;
	/* x, y, kernel: the user's fp32; xt, yt, any: the products' type */
	dnnl_memory_desc_t x, y, bias, kernel, xt, yt, any, dany;
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&x, 4, xd, dnnl_f32, dnnl_nhwc));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&y, 4, yd, dnnl_f32, dnnl_nhwc));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&xt, 4, xd, t, dnnl_nhwc));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&yt, 4, yd, t, dnnl_nhwc));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_x));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&kernel, 4, kd, dnnl_f32, dnnl_hwio));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&any, 4, kd, t, dnnl_format_tag_any));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&dany, 4, kd, dnnl_f32, dnnl_format_tag_any));

	dnnl_convolution_desc_t fd, dd, wd;
	dnnl_primitive_desc_t fpd, dpd, wpd;
	DNNL_CHECK(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training,
						      dnnl_convolution_direct, &xt, &any, &bias, &y,
						      strides, before, after));
	s->fwd = dn_make(&fd, NULL, NULL, &fpd);
	DNNL_CHECK(dnnl_convolution_backward_data_desc_init(&dd, dnnl_convolution_direct, &x, &any,
							    &yt, strides, before, after));
	s->bwd_data = dn_make(&dd, NULL, fpd, &dpd);
	/* in bf16 the bias's gradient, a sum, is left to the caller (from dy
	 * as it is) */
	DNNL_CHECK(dnnl_convolution_backward_weights_desc_init(&wd, dnnl_convolution_direct, &xt,
							       &dany, bf16 ? NULL : &bias, &yt,
							       strides, before, after));
	s->bwd_weights = dn_make(&wd, NULL, fpd, &wpd);

	const dnnl_memory_desc_t *kf = dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0),
				 *kb = dnnl_primitive_desc_query_md(dpd, dnnl_query_weights_md, 0),
				 *kw = dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_weights_md, 0);
	s->x = dn_mem(&x, 0);
	s->y = dn_mem(&y, 0);
	s->dx = dn_mem(&x, 0);
	s->bias = dn_mem(&bias, 0);
	s->dbias = dn_mem(&bias, 0);
	s->kernel = dn_mem(&kernel, 0);
	s->dkernel = dn_mem(&kernel, 0);
	s->to_fwd = dn_reorder(&kernel, kf);
	s->to_bwd = dn_reorder(&kernel, kb);
	s->from_diff = dn_reorder(kw, &kernel);
	s->to_x = dn_reorder(&x, &xt);
	s->to_dy = dn_reorder(&y, &yt);
	s->kernel_fwd = s->to_fwd ? dn_mem(kf, 1) : NULL;
	s->kernel_bwd = s->to_bwd ? dn_mem(kb, 1) : NULL;
	s->diff_kernel = s->from_diff ? dn_mem(kw, 1) : NULL;
	s->x16 = s->to_x ? dn_mem(&xt, 1) : NULL;
	s->dy16 = s->to_dy ? dn_mem(&yt, 1) : NULL;
	DNNL_CHECK(dnnl_primitive_desc_destroy(fpd));
	DNNL_CHECK(dnnl_primitive_desc_destroy(dpd));
	DNNL_CHECK(dnnl_primitive_desc_destroy(wpd));
	return s;
}

/* The primitives of this shape, made on first use. */
static struct conv_shape *conv_shape_of(int rows, const struct window *w, int filters, int bf16)
{
	for (int i = 0; i < g.n; i++) {
		struct conv_shape *s = g.shape[i];
		if (s->rows == rows && s->filters == filters && s->bf16 == bf16 &&
		    !memcmp(&s->w, w, sizeof(*w)))
			return s;
	}
	dn_on_release(conv_release);
	return dn_keep((void ***)&g.shape, &g.n, &g.cap, conv_make(rows, w, filters, bf16));
}

/* from as a primitive takes it: reordered into mine by to when to is not
 * NULL, else from itself. */
static dnnl_memory_t as(dnnl_primitive_t to, dnnl_memory_t from, dnnl_memory_t mine)
{
	if (!to)
		return from;
	dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, mine}};
	dn_run(to, 2, a);
	return mine;
}

void cpu_conv(const struct backend *be, float *y, const float *x, const float *kernel,
	      const float *bias, int rows, const struct window *w, int filters, int bf16)
{
	struct conv_shape *s = conv_shape_of(rows, w, filters, bf16);
	dn_set(s->x, x);
	dn_set(s->y, y);
	dn_set(s->bias, bias);
	dn_set(s->kernel, kernel);
	dnnl_exec_arg_t a[] = {{DNNL_ARG_SRC, as(s->to_x, s->x, s->x16)},
			       {DNNL_ARG_WEIGHTS, as(s->to_fwd, s->kernel, s->kernel_fwd)},
			       {DNNL_ARG_BIAS, s->bias},
			       {DNNL_ARG_DST, s->y}};
	dn_run(s->fwd, 4, a);
}

void cpu_conv_backward_data(const struct backend *be, float *dx, const float *dy,
			    const float *kernel, int rows, const struct window *w, int filters,
			    int bf16)
{
	struct conv_shape *s = conv_shape_of(rows, w, filters, bf16);
	dn_set(s->dx, dx);
	dn_set(s->y, dy);
	dn_set(s->kernel, kernel);
	/* backend.h: backward-data right after backward-weights of the same
	 * dy may take its conversion */
	int kept = s->dy16_of == dy;
	s->dy16_of = NULL;
	dnnl_exec_arg_t a[] = {{DNNL_ARG_DIFF_DST, kept ? s->dy16 : as(s->to_dy, s->y, s->dy16)},
			       {DNNL_ARG_WEIGHTS, as(s->to_bwd, s->kernel, s->kernel_bwd)},
			       {DNNL_ARG_DIFF_SRC, s->dx}};
	dn_run(s->bwd_data, 3, a);
}

void cpu_conv_backward_weights(const struct backend *be, float *dkernel, float *dbias,
			       const float *x, const float *dy, int rows, const struct window *w,
			       int filters, int bf16)
{
	struct conv_shape *s = conv_shape_of(rows, w, filters, bf16);
	dn_set(s->x, x);
	dn_set(s->y, dy);
	dn_set(s->dkernel, dkernel);
	dn_set(s->dbias, dbias);
	dnnl_memory_t out = s->from_diff ? s->diff_kernel : s->dkernel;
	dnnl_exec_arg_t a[] = {{DNNL_ARG_SRC, as(s->to_x, s->x, s->x16)},
			       {DNNL_ARG_DIFF_DST, as(s->to_dy, s->y, s->dy16)},
			       {DNNL_ARG_DIFF_WEIGHTS, out},
			       {DNNL_ARG_DIFF_BIAS, s->dbias}};
	dn_run(s->bwd_weights, bf16 ? 3 : 4, a);
	s->dy16_of = s->to_dy ? dy : NULL;
	if (s->from_diff) {
		dnnl_exec_arg_t b[] = {{DNNL_ARG_FROM, s->diff_kernel}, {DNNL_ARG_TO, s->dkernel}};
		dn_run(s->from_diff, 2, b);
	}
}

static void conv_release(void)
{
	for (int i = 0; i < g.n; i++) {
		struct conv_shape *s = g.shape[i];
		dnnl_primitive_t p[] = {s->fwd,	     s->bwd_data,  s->bwd_weights, s->to_fwd,
					s->to_bwd,   s->from_diff, s->to_x,	   s->to_dy};
		for (size_t j = 0; j < sizeof(p) / sizeof(p[0]); j++)
			dn_destroy(p[j]);
		dnnl_memory_t m[] = {s->x,	    s->y,	   s->dx,	   s->bias,
				     s->kernel,	    s->kernel_fwd, s->kernel_bwd,  s->diff_kernel,
				     s->dkernel,    s->dbias,	   s->x16,	   s->dy16};
		for (size_t j = 0; j < sizeof(m) / sizeof(m[0]); j++)
			dn_drop(m[j]);
		free(s);
	}
	free(g.shape);
	memset(&g, 0, sizeof(g));
}
