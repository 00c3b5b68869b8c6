/* Batch normalization's forward in training by oneDNN
 * (backend_cpu_dnnl.h). */
#include "backend_cpu_dnnl.h"
#include "backend_cpu_dnnl_int.h"

#include <stdlib.h>
#include <string.h>

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
	struct bn_shape **bn;
	int n, cap;
} g;

static void bn_release(void);

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
	s->fwd = dn_make(&fd, NULL, NULL, NULL);
	DNNL_CHECK(dnnl_batch_normalization_forward_desc_init(&rd, dnnl_forward_training, &x, eps,
							      flags | dnnl_fuse_norm_relu));
	s->fwd_relu = dn_make(&rd, NULL, NULL, &rpd);
	s->mask = dn_mem(dnnl_primitive_desc_query_md(rpd, dnnl_query_workspace_md, 0), 1);
	DNNL_CHECK(dnnl_primitive_desc_destroy(rpd));
	s->x = dn_mem(&x, 0);
	s->y = dn_mem(&x, 0);
	dnnl_memory_t *small[] = {&s->mean, &s->var, &s->scale, &s->shift};
	for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
		*small[i] = dn_mem(&c, 0);
	return s;
}

static struct bn_shape *bn_shape(int rows, int cols, float eps)
{
	for (int i = 0; i < g.n; i++)
		if (g.bn[i]->rows == rows && g.bn[i]->cols == cols && g.bn[i]->eps == eps)
			return g.bn[i];
	dn_on_release(bn_release);
	return dn_keep((void ***)&g.bn, &g.n, &g.cap, bn_make(rows, cols, eps));
}

void cpu_bn_train_forward(const struct backend *be, float *y, float *mean, float *var,
			  const float *x, const float *gamma, const float *beta, int rows,
			  int cols, float eps, float *a, enum act_kind act)
{
	struct bn_shape *s = bn_shape(rows, cols, eps);
	int fused = a && !y && act == ACT_RELU;
	dn_set(s->x, x);
	dn_set(s->y, fused || !y ? a : y);
	dn_set(s->mean, mean);
	dn_set(s->var, var);
	dn_set(s->scale, gamma);
	dn_set(s->shift, beta);
	dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, s->x},	 {DNNL_ARG_DST, s->y},
				  {DNNL_ARG_MEAN, s->mean},	 {DNNL_ARG_VARIANCE, s->var},
				  {DNNL_ARG_SCALE, s->scale},	 {DNNL_ARG_SHIFT, s->shift},
				  {DNNL_ARG_WORKSPACE, s->mask}};
	dn_run(fused ? s->fwd_relu : s->fwd, fused ? 7 : 6, args);
	if (a && !fused) /* act(y), y in a when y is NULL */
		be->act_forward(be, a, y ? y : a, (size_t)rows * cols, act);
}

static void bn_release(void)
{
	for (int i = 0; i < g.n; i++) {
		struct bn_shape *s = g.bn[i];
		dn_destroy(s->fwd);
		dn_destroy(s->fwd_relu);
		dnnl_memory_t m[] = {s->x, s->y, s->mean, s->var, s->scale, s->shift, s->mask};
		for (size_t j = 0; j < sizeof(m) / sizeof(m[0]); j++)
			dn_drop(m[j]);
		free(s);
	}
	free(g.bn);
	memset(&g, 0, sizeof(g));
}
