/* conv2d by oneDNN's direct kernels (backend_cpu_dnnl.h). oneDNN's 2.x
 * API (the *_desc_init calls, gone in 3.x) is spoken here and nowhere
 * else, so that moving to 3.x is this file.
 *
 * Each shape (rows, window, filters) gets its forward, backward-data and
 * backward-weights primitives once, kept for the run. Activations stay in
 * mtrain's NHWC; the kernel, Keras' [kh, kw, in, out], is reordered into
 * the blocked layout oneDNN's kernels take (a few KiB, at each call, since
 * the weights change every step), and its gradient reordered back. One
 * OpenMP thread unless backend_cpu_threads sets more, as for OpenBLAS. */
#include "backend_cpu_dnnl.h"

#include "check.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DNNL_CHECK(call)                                                       \
	do {                                                                   \
		dnnl_status_t dnnl_check_rc_ = (call);                         \
		if (dnnl_check_rc_ != dnnl_success)                            \
			check_fail("oneDNN", #call, status_text(dnnl_check_rc_), \
				   __FILE__, __LINE__);                        \
	} while (0)

static const char *status_text(dnnl_status_t s)
{
	switch (s) {
	case dnnl_out_of_memory: return "out of memory";
	case dnnl_invalid_arguments: return "invalid arguments";
	case dnnl_unimplemented: return "unimplemented";
	default: return "error";
	}
}

/* One shape's primitives, and the memory objects they run on: the user's
 * buffers (handles set at each call) and the kernel in oneDNN's layouts. */
struct conv_shape {
	int rows, filters;
	struct window w;
	dnnl_primitive_t fwd, bwd_data, bwd_weights;
	/* kernel (Keras' layout) -> forward's and backward-data's layouts,
	 * and backward-weights' gradient -> Keras' layout; NULL where a
	 * layout is Keras' own */
	dnnl_primitive_t to_fwd, to_bwd, from_diff;
	dnnl_memory_t x, y, bias, kernel, kernel_fwd, kernel_bwd, diff_kernel, dkernel, dbias;
};

static int threads = 1;

/* Batch normalization's forward for one shape (rows x channels): plain,
 * and with a relu after it (its workspace, the relu's mask for a backward
 * of oneDNN's, thrown away: mtrain's backward takes the mask from relu's
 * output). */
struct bn_shape {
	int rows, cols;
	float eps;
	dnnl_primitive_t fwd, fwd_relu;
	dnnl_memory_t x, y, mean, var, scale, shift, mask;
};

static struct {
	dnnl_engine_t engine;
	dnnl_stream_t stream;
	struct conv_shape **shape;
	int n, cap;
	struct bn_shape **bn;
	int n_bn, cap_bn;
} g;

static void start(void)
{
	if (g.engine)
		return;
	DNNL_CHECK(dnnl_engine_create(&g.engine, dnnl_cpu, 0));
	DNNL_CHECK(dnnl_stream_create(&g.stream, g.engine, dnnl_stream_default_flags));
	omp_set_num_threads(threads);
}

void cpu_conv_threads(int n)
{
	threads = n;
	omp_set_num_threads(n);
}

static dnnl_memory_t memory(const dnnl_memory_desc_t *md, int own)
{
	dnnl_memory_t m;
	DNNL_CHECK(dnnl_memory_create(&m, md, g.engine, own ? DNNL_MEMORY_ALLOCATE : DNNL_MEMORY_NONE));
	return m;
}

/* A reorder from memory of layout a to layout b; NULL when they are one. */
static dnnl_primitive_t reorder(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b)
{
	if (dnnl_memory_desc_equal(a, b))
		return NULL;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t p;
	DNNL_CHECK(dnnl_reorder_primitive_desc_create(&pd, a, g.engine, b, g.engine, NULL));
	DNNL_CHECK(dnnl_primitive_create(&p, pd));
	DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
	return p;
}

static dnnl_primitive_t primitive(const_dnnl_op_desc_t desc, const_dnnl_primitive_desc_t hint,
				  dnnl_primitive_desc_t *pd_out)
{
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t p;
	DNNL_CHECK(dnnl_primitive_desc_create(&pd, desc, NULL, g.engine, hint));
	DNNL_CHECK(dnnl_primitive_create(&p, pd));
	if (pd_out)
		*pd_out = pd;
	else
		DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
	return p;
}

static struct conv_shape *make(int rows, const struct window *w, int filters)
{
	struct conv_shape *s = calloc(1, sizeof(*s));
	ALLOC_CHECK(s);
	s->rows = rows;
	s->filters = filters;
	s->w = *w;
	/* oneDNN's dims are logical (N, C, H, W and O, I, H, W); the tags give
	 * mtrain's layouts. Padding after the image: what the output needs
	 * past the padding before, 0 where 'valid' leaves input unread. */
	dnnl_dims_t xd = {rows, w->c, w->h, w->w}, kd = {filters, w->c, w->kh, w->kw},
		    bd = {filters}, yd = {rows, filters, w->oh, w->ow};
	int pb = (w->oh - 1) * w->sh + w->kh - w->h - w->pt,
	    pr = (w->ow - 1) * w->sw + w->kw - w->w - w->pl;
	dnnl_dims_t strides = {w->sh, w->sw}, before = {w->pt, w->pl},
		    after = {pb > 0 ? pb : 0, pr > 0 ? pr : 0};
	dnnl_memory_desc_t x, y, bias, kernel, any;
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&x, 4, xd, dnnl_f32, dnnl_nhwc));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&y, 4, yd, dnnl_f32, dnnl_nhwc));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_x));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&kernel, 4, kd, dnnl_f32, dnnl_hwio));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&any, 4, kd, dnnl_f32, dnnl_format_tag_any));

	dnnl_convolution_desc_t fd, dd, wd;
	dnnl_primitive_desc_t fpd, dpd, wpd;
	DNNL_CHECK(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training,
						      dnnl_convolution_direct, &x, &any, &bias, &y,
						      strides, before, after));
	s->fwd = primitive(&fd, NULL, &fpd);
	DNNL_CHECK(dnnl_convolution_backward_data_desc_init(&dd, dnnl_convolution_direct, &x, &any,
							    &y, strides, before, after));
	s->bwd_data = primitive(&dd, fpd, &dpd);
	DNNL_CHECK(dnnl_convolution_backward_weights_desc_init(&wd, dnnl_convolution_direct, &x,
							       &any, &bias, &y, strides, before,
							       after));
	s->bwd_weights = primitive(&wd, fpd, &wpd);

	const dnnl_memory_desc_t *kf = dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0),
				 *kb = dnnl_primitive_desc_query_md(dpd, dnnl_query_weights_md, 0),
				 *kw = dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_weights_md, 0);
	s->x = memory(&x, 0);
	s->y = memory(&y, 0);
	s->bias = memory(&bias, 0);
	s->dbias = memory(&bias, 0);
	s->kernel = memory(&kernel, 0);
	s->dkernel = memory(&kernel, 0);
	s->to_fwd = reorder(&kernel, kf);
	s->to_bwd = reorder(&kernel, kb);
	s->from_diff = reorder(kw, &kernel);
	s->kernel_fwd = s->to_fwd ? memory(kf, 1) : NULL;
	s->kernel_bwd = s->to_bwd ? memory(kb, 1) : NULL;
	s->diff_kernel = s->from_diff ? memory(kw, 1) : NULL;
	DNNL_CHECK(dnnl_primitive_desc_destroy(fpd));
	DNNL_CHECK(dnnl_primitive_desc_destroy(dpd));
	DNNL_CHECK(dnnl_primitive_desc_destroy(wpd));
	return s;
}

/* The primitives of this shape, made on first use. */
static struct conv_shape *shape(int rows, const struct window *w, int filters)
{
	start();
	for (int i = 0; i < g.n; i++) {
		struct conv_shape *s = g.shape[i];
		if (s->rows == rows && s->filters == filters && !memcmp(&s->w, w, sizeof(*w)))
			return s;
	}
	if (g.n == g.cap) {
		g.cap = g.cap ? 2 * g.cap : 16;
		g.shape = realloc(g.shape, (size_t)g.cap * sizeof(*g.shape));
		ALLOC_CHECK(g.shape);
	}
	return g.shape[g.n++] = make(rows, w, filters);
}

static void set(dnnl_memory_t m, const float *p)
{
	DNNL_CHECK(dnnl_memory_set_data_handle(m, (void *)p));
}

static void run(dnnl_primitive_t p, int n, const dnnl_exec_arg_t *args)
{
	DNNL_CHECK(dnnl_primitive_execute(p, g.stream, n, args));
}

/* The kernel in the layout of a primitive: reordered into mine when to is
 * not NULL, else the user's own memory. */
static dnnl_memory_t kernel_as(struct conv_shape *s, dnnl_primitive_t to, dnnl_memory_t mine)
{
	if (!to)
		return s->kernel;
	dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, s->kernel}, {DNNL_ARG_TO, mine}};
	run(to, 2, a);
	return mine;
}

void cpu_conv(const struct backend *be, float *y, const float *x, const float *kernel,
	      const float *bias, int rows, const struct window *w, int filters)
{
	struct conv_shape *s = shape(rows, w, filters);
	set(s->x, x);
	set(s->y, y);
	set(s->bias, bias);
	set(s->kernel, kernel);
	dnnl_exec_arg_t a[] = {{DNNL_ARG_SRC, s->x},
			       {DNNL_ARG_WEIGHTS, kernel_as(s, s->to_fwd, s->kernel_fwd)},
			       {DNNL_ARG_BIAS, s->bias},
			       {DNNL_ARG_DST, s->y}};
	run(s->fwd, 4, a);
}

void cpu_conv_backward_data(const struct backend *be, float *dx, const float *dy,
			    const float *kernel, int rows, const struct window *w, int filters)
{
	struct conv_shape *s = shape(rows, w, filters);
	set(s->x, dx);
	set(s->y, dy);
	set(s->kernel, kernel);
	dnnl_exec_arg_t a[] = {{DNNL_ARG_DIFF_DST, s->y},
			       {DNNL_ARG_WEIGHTS, kernel_as(s, s->to_bwd, s->kernel_bwd)},
			       {DNNL_ARG_DIFF_SRC, s->x}};
	run(s->bwd_data, 3, a);
}

void cpu_conv_backward_weights(const struct backend *be, float *dkernel, float *dbias,
			       const float *x, const float *dy, int rows, const struct window *w,
			       int filters)
{
	struct conv_shape *s = shape(rows, w, filters);
	set(s->x, x);
	set(s->y, dy);
	set(s->dkernel, dkernel);
	set(s->dbias, dbias);
	dnnl_memory_t out = s->from_diff ? s->diff_kernel : s->dkernel;
	dnnl_exec_arg_t a[] = {{DNNL_ARG_SRC, s->x},
			       {DNNL_ARG_DIFF_DST, s->y},
			       {DNNL_ARG_DIFF_WEIGHTS, out},
			       {DNNL_ARG_DIFF_BIAS, s->dbias}};
	run(s->bwd_weights, 4, a);
	if (s->from_diff) {
		dnnl_exec_arg_t b[] = {{DNNL_ARG_FROM, s->diff_kernel}, {DNNL_ARG_TO, s->dkernel}};
		run(s->from_diff, 2, b);
	}
}

static struct bn_shape *bn_make(int rows, int cols, float eps)
{
	struct bn_shape *s = calloc(1, sizeof(*s));
	ALLOC_CHECK(s);
	s->rows = rows;
	s->cols = cols;
	s->eps = eps;
	/* The rows as images of k positions, NHWC: oneDNN's kernels for
	 * channels last loop over the images, each one's positions inside
	 * (2-D rows take a reference loop, 1-position images 2x as long as
	 * ours); the statistics are over all of them alike. k: the largest
	 * divisor of rows up to 1024 (an image's positions, in a CNN). */
	int k = 1;
	for (int d = 1024; d > 1 && k == 1; d--)
		k = rows % d ? 1 : d;
	dnnl_dims_t xd = {rows / k, cols, k, 1}, cd = {cols};
	dnnl_memory_desc_t x, c;
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&x, 4, xd, dnnl_f32, dnnl_nhwc));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&c, 1, cd, dnnl_f32, dnnl_x));
	unsigned flags = dnnl_use_scale | dnnl_use_shift;
	dnnl_batch_normalization_desc_t fd, rd;
	dnnl_primitive_desc_t rpd;
	DNNL_CHECK(dnnl_batch_normalization_forward_desc_init(&fd, dnnl_forward_training, &x, eps,
							      flags));
	s->fwd = primitive(&fd, NULL, NULL);
	DNNL_CHECK(dnnl_batch_normalization_forward_desc_init(&rd, dnnl_forward_training, &x, eps,
							      flags | dnnl_fuse_norm_relu));
	s->fwd_relu = primitive(&rd, NULL, &rpd);
	s->mask = memory(dnnl_primitive_desc_query_md(rpd, dnnl_query_workspace_md, 0), 1);
	DNNL_CHECK(dnnl_primitive_desc_destroy(rpd));
	s->x = memory(&x, 0);
	s->y = memory(&x, 0);
	dnnl_memory_t *small[] = {&s->mean, &s->var, &s->scale, &s->shift};
	for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
		*small[i] = memory(&c, 0);
	return s;
}

static struct bn_shape *bn_shape(int rows, int cols, float eps)
{
	start();
	for (int i = 0; i < g.n_bn; i++)
		if (g.bn[i]->rows == rows && g.bn[i]->cols == cols && g.bn[i]->eps == eps)
			return g.bn[i];
	if (g.n_bn == g.cap_bn) {
		g.cap_bn = g.cap_bn ? 2 * g.cap_bn : 16;
		g.bn = realloc(g.bn, (size_t)g.cap_bn * sizeof(*g.bn));
		ALLOC_CHECK(g.bn);
	}
	return g.bn[g.n_bn++] = bn_make(rows, cols, eps);
}

void cpu_bn_train_forward(const struct backend *be, float *y, float *mean, float *var,
			  const float *x, const float *gamma, const float *beta, int rows,
			  int cols, float eps, float *a, enum act_kind act)
{
	struct bn_shape *s = bn_shape(rows, cols, eps);
	int fused = a && !y && act == ACT_RELU;
	set(s->x, x);
	set(s->y, fused || !y ? a : y);
	set(s->mean, mean);
	set(s->var, var);
	set(s->scale, gamma);
	set(s->shift, beta);
	dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, s->x},	 {DNNL_ARG_DST, s->y},
				  {DNNL_ARG_MEAN, s->mean},	 {DNNL_ARG_VARIANCE, s->var},
				  {DNNL_ARG_SCALE, s->scale},	 {DNNL_ARG_SHIFT, s->shift},
				  {DNNL_ARG_WORKSPACE, s->mask}};
	run(fused ? s->fwd_relu : s->fwd, fused ? 7 : 6, args);
	if (a && !fused) /* act(y), y in a when y is NULL */
		be->act_forward(be, a, y ? y : a, (size_t)rows * cols, act);
}

const char *cpu_conv_kernels(void)
{
	static char text[64];
	if (text[0])
		return text;
	const dnnl_version_t *v = dnnl_version();
	const char *isa;
	switch (dnnl_get_effective_cpu_isa()) {
	case dnnl_cpu_isa_sse41: isa = "sse4.1"; break;
	case dnnl_cpu_isa_avx: isa = "avx"; break;
	case dnnl_cpu_isa_avx2: isa = "avx2"; break;
	case dnnl_cpu_isa_avx2_vnni: isa = "avx2 vnni"; break;
	case dnnl_cpu_isa_avx512_core: isa = "avx512"; break;
	case dnnl_cpu_isa_avx512_core_vnni: isa = "avx512 vnni"; break;
	case dnnl_cpu_isa_avx512_core_bf16: isa = "avx512 bf16"; break;
	case dnnl_cpu_isa_avx512_core_amx: isa = "avx512 amx"; break;
	default: isa = "generic"; break;
	}
	snprintf(text, sizeof(text), "oneDNN %d.%d.%d, %s", v->major, v->minor, v->patch, isa);
	return text;
}

static void destroy(dnnl_primitive_t p)
{
	if (p)
		dnnl_primitive_destroy(p);
}

static void drop(dnnl_memory_t m)
{
	if (m)
		dnnl_memory_destroy(m);
}

void cpu_conv_release(void)
{
	for (int i = 0; i < g.n; i++) {
		struct conv_shape *s = g.shape[i];
		destroy(s->fwd);
		destroy(s->bwd_data);
		destroy(s->bwd_weights);
		destroy(s->to_fwd);
		destroy(s->to_bwd);
		destroy(s->from_diff);
		dnnl_memory_t m[] = {s->x, s->y, s->bias, s->kernel, s->kernel_fwd, s->kernel_bwd,
				     s->diff_kernel, s->dkernel, s->dbias};
		for (size_t j = 0; j < sizeof(m) / sizeof(m[0]); j++)
			drop(m[j]);
		free(s);
	}
	free(g.shape);
	for (int i = 0; i < g.n_bn; i++) {
		struct bn_shape *s = g.bn[i];
		destroy(s->fwd);
		destroy(s->fwd_relu);
		dnnl_memory_t m[] = {s->x, s->y, s->mean, s->var, s->scale, s->shift, s->mask};
		for (size_t j = 0; j < sizeof(m) / sizeof(m[0]); j++)
			drop(m[j]);
		free(s);
	}
	free(g.bn);
	if (g.stream)
		dnnl_stream_destroy(g.stream);
	if (g.engine)
		dnnl_engine_destroy(g.engine);
	memset(&g, 0, sizeof(g));
}
