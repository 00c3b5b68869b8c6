/* bench_onednn: oneDNN's kernels for the op kinds mtrain keeps its own of,
 * against the CPU backend's ops on the same shapes in the same run: the
 * measurement behind which path runs (docs/speed.md, "oneDNN's kernels").
 * conv2d and batch norm's forward, which oneDNN won, run in the backend
 * (src/backend_cpu_dnnl.c); bench_layers --cpu-kernels onednn|own measures
 * them in place. Like that file this one speaks oneDNN's 2.x API (the
 * *_desc_init calls): moving to 3.x moves both.
 *
 * usage: bench_onednn [ROWS]   (a rank's images a step, default 64)
 * prints per kind: "KIND SHAPE mtrain FWD BWD onednn FWD BWD" in ms (the
 * best of 20 calls), one thread. Shapes: the CNN's max pooling (2x2 on
 * 26x26x32 and 11x11x64), the ViT's layer norm (ROWS * 49 tokens of 64)
 * and attention's softmax (ROWS * 4 heads * 49 rows of 49), the MLP's
 * dense products (ROWS x 784 x 256) as sgemm. */
#include "backend.h"
#include "bench_gemm.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define REPS 20
#define CK(call)                                                                        \
	do {                                                                            \
		if ((call) != dnnl_success) {                                           \
			fprintf(stderr, "bench_onednn: %s failed\n", #call);            \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

static dnnl_engine_t eng;
static dnnl_stream_t stream;

static dnnl_memory_t mem(const dnnl_memory_desc_t *md)
{
	dnnl_memory_t m;
	float *p;
	CK(dnnl_memory_create(&m, md, eng, DNNL_MEMORY_ALLOCATE));
	CK(dnnl_memory_get_data_handle(m, (void **)&p));
	for (size_t i = 0; i < dnnl_memory_desc_get_size(md) / 4; i++)
		p[i] = (float)(i % 13) * 0.1f - 0.5f;
	return m;
}

static dnnl_primitive_t prim(const_dnnl_op_desc_t d, const_dnnl_primitive_desc_t hint,
			     dnnl_primitive_desc_t *pd)
{
	dnnl_primitive_t p;
	CK(dnnl_primitive_desc_create(pd, d, NULL, eng, hint));
	CK(dnnl_primitive_create(&p, *pd));
	return p;
}

static double best_dnnl(dnnl_primitive_t p, int n, const dnnl_exec_arg_t *a)
{
	double best = 1e30;
	for (int r = 0; r <= REPS; r++) {
		double t0 = bench_now();
		CK(dnnl_primitive_execute(p, stream, n, a));
		double t = bench_now() - t0;
		best = r && t < best ? t : best; /* the first call warms up */
	}
	return best * 1e3;
}

/* The best of REPS timed runs of a statement, ms. */
#define BEST(stmt, out)                                                                 \
	do {                                                                            \
		out = 1e30;                                                             \
		for (int r_ = 0; r_ <= REPS; r_++) {                                    \
			double t0_ = bench_now();                                       \
			stmt;                                                           \
			double t_ = (bench_now() - t0_) * 1e3;                          \
			out = r_ && t_ < out ? t_ : out;                                \
		}                                                                       \
	} while (0)

static void pool(const struct backend *be, int n, int h, int c)
{
	int o = h / 2;
	struct window w = {.h = h, .w = h, .c = c, .kh = 2, .kw = 2, .sh = 2, .sw = 2, .oh = o,
			   .ow = o};
	float *x = bench_rand((size_t)n * h * h * c, -0.5f), *y = bench_rand((size_t)n * o * o * c, 0),
	      *dx = bench_rand((size_t)n * h * h * c, 0);
	double f, b;
	BEST(be->pool(be, y, x, n, &w, 1), f);
	BEST(be->pool_backward(be, dx, y, x, n, &w, 1), b);
	dnnl_dims_t xd = {n, c, h, h}, yd = {n, c, o, o}, k = {2, 2}, s = {2, 2}, z = {0, 0},
		    pr = {(o - 1) * 2 + 2 - h, (o - 1) * 2 + 2 - h};
	dnnl_memory_desc_t xm, ym;
	CK(dnnl_memory_desc_init_by_tag(&xm, 4, xd, dnnl_f32, dnnl_nhwc));
	CK(dnnl_memory_desc_init_by_tag(&ym, 4, yd, dnnl_f32, dnnl_nhwc));
	dnnl_pooling_v2_desc_t fd, bd;
	dnnl_primitive_desc_t fpd, bpd;
	CK(dnnl_pooling_v2_forward_desc_init(&fd, dnnl_forward_training, dnnl_pooling_max, &xm,
					     &ym, s, k, z, z, pr));
	dnnl_primitive_t fp = prim(&fd, NULL, &fpd);
	CK(dnnl_pooling_v2_backward_desc_init(&bd, dnnl_pooling_max, &xm, &ym, s, k, z, z, pr));
	dnnl_primitive_t bp = prim(&bd, fpd, &bpd);
	dnnl_memory_t mx = mem(&xm), my = mem(&ym), mdx = mem(&xm),
		      ws = mem(dnnl_primitive_desc_query_md(fpd, dnnl_query_workspace_md, 0));
	dnnl_exec_arg_t fa[] = {{DNNL_ARG_SRC, mx}, {DNNL_ARG_DST, my}, {DNNL_ARG_WORKSPACE, ws}},
			ba[] = {{DNNL_ARG_DIFF_DST, my}, {DNNL_ARG_DIFF_SRC, mdx},
				{DNNL_ARG_WORKSPACE, ws}};
	printf("maxpool2d %dx%dx%dx%d mtrain %.3f %.3f onednn %.3f %.3f\n", n, h, h, c, f, b,
	       best_dnnl(fp, 3, fa), best_dnnl(bp, 3, ba));
	free(x);
	free(y);
	free(dx);
}

static void layernorm(const struct backend *be, int rows, int cols)
{
	float *x = bench_rand((size_t)rows * cols, -0.5f), *y = bench_rand((size_t)rows * cols, 0),
	      *st = bench_rand(2 * (size_t)rows, 0), *g = bench_rand(2 * (size_t)cols, 0);
	double f, b;
	BEST(be->ln_forward(be, y, st, st + rows, x, g, g + cols, rows, cols, 1e-3f), f);
	BEST(be->ln_backward(be, y, g, g + cols, y, x, st, st + rows, g, rows, cols), b);
	dnnl_dims_t xd = {rows, cols}, sd = {rows}, cd = {cols};
	dnnl_memory_desc_t xm, sm, cm;
	CK(dnnl_memory_desc_init_by_tag(&xm, 2, xd, dnnl_f32, dnnl_nc));
	CK(dnnl_memory_desc_init_by_tag(&sm, 1, sd, dnnl_f32, dnnl_x));
	CK(dnnl_memory_desc_init_by_tag(&cm, 1, cd, dnnl_f32, dnnl_x));
	unsigned fl = dnnl_use_scale | dnnl_use_shift;
	dnnl_layer_normalization_desc_t fd, bd;
	dnnl_primitive_desc_t fpd, bpd;
	CK(dnnl_layer_normalization_forward_desc_init(&fd, dnnl_forward_training, &xm, &sm, 1e-3f,
						      fl));
	dnnl_primitive_t fp = prim(&fd, NULL, &fpd);
	CK(dnnl_layer_normalization_backward_desc_init(&bd, dnnl_backward, &xm, &xm, &sm, 1e-3f,
						       fl));
	dnnl_primitive_t bp = prim(&bd, fpd, &bpd);
	dnnl_memory_t mx = mem(&xm), my = mem(&xm), mu = mem(&sm), va = mem(&sm), sc = mem(&cm),
		      sh = mem(&cm), dx = mem(&xm), dsc = mem(&cm), dsh = mem(&cm);
	dnnl_exec_arg_t fa[] = {{DNNL_ARG_SRC, mx},	{DNNL_ARG_DST, my},
				{DNNL_ARG_MEAN, mu},	{DNNL_ARG_VARIANCE, va},
				{DNNL_ARG_SCALE, sc},	{DNNL_ARG_SHIFT, sh}},
			ba[] = {{DNNL_ARG_SRC, mx},	   {DNNL_ARG_DIFF_DST, my},
				{DNNL_ARG_MEAN, mu},	   {DNNL_ARG_VARIANCE, va},
				{DNNL_ARG_SCALE, sc},	   {DNNL_ARG_SHIFT, sh},
				{DNNL_ARG_DIFF_SRC, dx},   {DNNL_ARG_DIFF_SCALE, dsc},
				{DNNL_ARG_DIFF_SHIFT, dsh}};
	printf("layernorm %dx%d mtrain %.3f %.3f onednn %.3f %.3f\n", rows, cols, f, b,
	       best_dnnl(fp, 6, fa), best_dnnl(bp, 9, ba));
	free(x);
	free(y);
	free(st);
	free(g);
}

static void softmax(const struct backend *be, int rows, int cols)
{
	float *x = bench_rand((size_t)rows * cols, -0.5f), *y = bench_rand((size_t)rows * cols, 0),
	      *d = bench_rand((size_t)rows * cols, 0);
	double f, b;
	BEST(be->softmax(be, y, x, rows, cols, 1.0f, 0), f);
	BEST(be->softmax_backward(be, d, x, y, rows, cols, 1.0f), b);
	dnnl_dims_t xd = {rows, cols};
	dnnl_memory_desc_t xm;
	CK(dnnl_memory_desc_init_by_tag(&xm, 2, xd, dnnl_f32, dnnl_nc));
	dnnl_softmax_v2_desc_t fd, bd;
	dnnl_primitive_desc_t fpd, bpd;
	CK(dnnl_softmax_v2_forward_desc_init(&fd, dnnl_forward_training, dnnl_softmax_accurate,
					     &xm, &xm, 1));
	dnnl_primitive_t fp = prim(&fd, NULL, &fpd);
	CK(dnnl_softmax_v2_backward_desc_init(&bd, dnnl_softmax_accurate, &xm, &xm, &xm, 1));
	dnnl_primitive_t bp = prim(&bd, fpd, &bpd);
	dnnl_memory_t mx = mem(&xm), my = mem(&xm), md = mem(&xm);
	dnnl_exec_arg_t fa[] = {{DNNL_ARG_SRC, mx}, {DNNL_ARG_DST, my}},
			ba[] = {{DNNL_ARG_DST, my}, {DNNL_ARG_DIFF_DST, md}, {DNNL_ARG_DIFF_SRC, md}};
	printf("softmax %dx%d mtrain %.3f %.3f onednn %.3f %.3f\n", rows, cols, f, b,
	       best_dnnl(fp, 2, fa), best_dnnl(bp, 3, ba));
	free(x);
	free(y);
	free(d);
}

/* The MLP's first layer: forward x (R,784) @ w (784,256), and the kernel's
 * gradient x^T @ dz. */
static void dense(int rows)
{
	int in = 784, out = 256;
	float *x = bench_rand((size_t)rows * in, -0.5f), *w = bench_rand((size_t)in * out, -0.5f),
	      *y = bench_rand((size_t)rows * out, 0), *g = bench_rand((size_t)in * out, 0);
	double f, b, df, db;
	BEST(cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, out, in, 1.0f, x, in, w,
			 out, 0.0f, y, out), f);
	BEST(cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, in, out, rows, 1.0f, x, in, y,
			 out, 0.0f, g, out), b);
	BEST(CK(dnnl_sgemm('N', 'N', rows, out, in, 1.0f, x, in, w, out, 0.0f, y, out)), df);
	BEST(CK(dnnl_sgemm('T', 'N', in, out, rows, 1.0f, x, in, y, out, 0.0f, g, out)), db);
	printf("dense %dx%dx%d mtrain %.3f %.3f onednn %.3f %.3f\n", rows, in, out, f, b, df, db);
	free(x);
	free(w);
	free(y);
	free(g);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 64;
	if (argc > 2 || n < 1 || n > 4096) {
		fprintf(stderr, "usage: bench_onednn [ROWS]   (1 to 4096, default 64)\n");
		return 1;
	}
	const struct backend *be = backend_cpu_own();
	omp_set_num_threads(1);
	CK(dnnl_engine_create(&eng, dnnl_cpu, 0));
	CK(dnnl_stream_create(&stream, eng, dnnl_stream_default_flags));
	printf("bench_onednn: %d rows, one thread, ms, best of %d: mtrain's op forward backward, "
	       "then oneDNN's\n", n, REPS);
	pool(be, n, 26, 32);
	pool(be, n, 11, 64);
	layernorm(be, n * 49, 64);
	softmax(be, n * 4 * 49, 49);
	dense(n);
	return 0;
}
