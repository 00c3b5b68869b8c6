/* Gradient checks on the CPU backend: the model's backward pass against
 * central differences of its loss, for every layer kind and activation, its
 * two layouts and its gradient buckets; each activation's derivative against
 * differences and reference values. The layer ops on their own are
 * test_layer_ops.c. */
#include "backend.h"
#include "gradcheck.h"
#include "mathfn.h"
#include "model.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static void check_model(const char *desc, uint64_t seed)
{
	const int flat[3] = {1, 1, IN};
	check_model_in(desc, flat, seed);
}

/* act_backward (and act_bwd of mathfn.h) against central differences of
 * act_fwd, in place and out of place. */
static void check_act_backward(const struct backend *be)
{
	enum { N = 8 };
	const float z[N] = {-2.7f, -1.3f, -0.4f, -0.05f, 0.07f, 0.6f, 1.4f, 3.1f};
	const float da[N] = {1.0f, -0.5f, 2.0f, 0.3f, -1.7f, 0.9f, -1.1f, 0.25f};
	const float h = 1e-3f;
	for (int act = ACT_RELU; act < ACT_COUNT; act++) {
		float *bz = be->alloc(be, sizeof(z)), *bda = be->alloc(be, sizeof(da));
		float *bdz = be->alloc(be, sizeof(z));
		be->copy_in(be, bz, z, sizeof(z));
		be->copy_in(be, bda, da, sizeof(da));
		be->act_backward(be, bdz, bda, bz, N, (enum act_kind)act);
		float dz[N], inplace[N];
		be->copy_out(be, dz, bdz, sizeof(dz));
		be->act_backward(be, bda, bda, bz, N, (enum act_kind)act); /* dz aliases da */
		be->copy_out(be, inplace, bda, sizeof(inplace));
		for (int i = 0; i < N; i++) {
			double fd = ((double)act_fwd((enum act_kind)act, z[i] + h) -
				     (double)act_fwd((enum act_kind)act, z[i] - h)) / (2.0 * h);
			EXPECT_NEAR(dz[i], da[i] * fd, 1e-3);
			EXPECT_NEAR(act_bwd((enum act_kind)act, z[i], da[i]), da[i] * fd, 1e-3);
			EXPECT(inplace[i] == dz[i]);
		}
		be->free(be, bz);
		be->free(be, bda);
		be->free(be, bdz);
	}
}

/* silu against PyTorch's formula, x / (1 + exp(-x)), and its derivative
 * sigmoid(x) * (1 + x * (1 - sigmoid(x))), both computed in double (Python)
 * at these points: act_fwd and act_bwd, and the backend's loops. */
static void check_silu_reference(const struct backend *be)
{
	enum { N = 8 };
	static const float x[N] = {-6.0f, -2.5f, -1.0f, -0.25f, 0.0f, 0.5f, 1.75f, 4.0f};
	static const double y[N] = {-0.014835738939808647, -0.18964545005310887,
				    -0.2689414213699951,   -0.10945587477855048,
				    0.0,                   0.3112296656009273,
				    1.4909174034445436,    3.928055160151634};
	static const double dydx[N] = {-0.012326432591525513, -0.09940111134152682,
				       0.07232948812851325,   0.37628997842980233,
				       0.5,                   0.7399611873026519,
				       1.072678946044957,     1.0526646148910728};
	float *bx = be->alloc(be, sizeof(x)), *by = be->alloc(be, sizeof(x));
	float got[N];
	be->copy_in(be, bx, x, sizeof(x));
	be->act_forward(be, by, bx, N, ACT_SILU);
	be->copy_out(be, got, by, sizeof(got));
	for (int i = 0; i < N; i++) {
		EXPECT_NEAR(act_fwd(ACT_SILU, x[i]), y[i], 1e-6);
		EXPECT_NEAR(got[i], y[i], 1e-6);
		EXPECT_NEAR(act_bwd(ACT_SILU, x[i], 1.0f), dydx[i], 1e-6);
		EXPECT_NEAR(act_bwd(ACT_SILU, x[i], -2.0f), -2.0 * dydx[i], 1e-6);
	}
	be->free(be, bx);
	be->free(be, by);
}

/* bias_act adds the bias to z and writes act(z); with a NULL a it only adds. */
static void check_bias_act(const struct backend *be)
{
	enum { R = 2, C = 3 };
	const float z0[R * C] = {-1.0f, 0.25f, 2.0f, 0.5f, -0.75f, -3.0f};
	const float bias[C] = {0.5f, -1.0f, 1.5f};
	for (int act = ACT_RELU; act < ACT_COUNT; act++) {
		float z[R * C], a[R * C];
		float *bz = be->alloc(be, sizeof(z)), *ba = be->alloc(be, sizeof(a));
		float *bb = be->alloc(be, sizeof(bias));
		be->copy_in(be, bz, z0, sizeof(z0));
		be->copy_in(be, bb, bias, sizeof(bias));
		be->bias_act(be, ba, bz, bb, R, C, (enum act_kind)act);
		be->copy_out(be, z, bz, sizeof(z));
		be->copy_out(be, a, ba, sizeof(a));
		for (int i = 0; i < R * C; i++) {
			float want = z0[i] + bias[i % C];
			EXPECT_NEAR(z[i], want, 1e-7);
			EXPECT_NEAR(a[i], act_fwd((enum act_kind)act, want), 1e-6);
		}
		be->bias_act(be, NULL, bz, bb, R, C, (enum act_kind)act);
		be->copy_out(be, z, bz, sizeof(z));
		EXPECT_NEAR(z[4], z0[4] + 2.0f * bias[1], 1e-7);
		be->free(be, bz);
		be->free(be, ba);
		be->free(be, bb);
	}
}

/* Gradient buckets: model_backward reports each layer's span (kernel then
 * bias, adjacent) once, last layer first, after that layer's grads are final. */
struct spans {
	const struct model *m;
	int n;
	float *g[8];
	size_t len[8];
	int final[8]; /* the span already held its final values when reported */
};

static void record_span(void *ctx, float *g, size_t n)
{
	struct spans *s = ctx;
	s->g[s->n] = g;
	s->len[s->n] = n;
	s->final[s->n] = g[0] != -1.0f; /* poisoned before backward */
	s->n++;
}

static void check_buckets(void)
{
	const struct backend *be = backend_cpu();
	struct model m;
	int hidden[2] = {7, 6};
	model_init(&m, be, IN, CLASSES, hidden, 2, ACT_TANH, ROWS);
	struct rng r;
	rng_init(&r, 9, 0);
	model_glorot(&m, 9, m.w);
	float x[ROWS * IN];
	int32_t y[ROWS] = {0, 1, 3};
	for (int i = 0; i < ROWS * IN; i++)
		x[i] = uniform(&r, -1, 1);
	model_set_batch(&m, x, y, ROWS);
	float stats[2];
	model_forward(&m, ROWS, 1, 1.0f);
	model_take_stats(&m, stats);
	for (size_t i = 0; i < m.reg.total; i++)
		m.g[i] = -1.0f;
	struct spans s = {.m = &m};
	model_backward(&m, ROWS, record_span, &s);
	EXPECT(s.n == 3);
	for (int i = 0; i < s.n && i < 3; i++) {
		const struct layer *d = &m.layer[2 * (2 - i)]; /* dense, relu, dense, relu, dense */
		EXPECT(d->spec.kind == LAYER_DENSE);
		EXPECT(s.g[i] == m.g + d->var[0]);
		EXPECT(s.len[i] == d->in_size * d->out_size +
				       (d->var[1] - d->var[0] - d->in_size * d->out_size) + d->out_size);
		EXPECT(s.final[i]);
	}
	model_free(&m);
}

int main(void)
{
	check_buckets();
	const struct backend *be = backend_cpu();
	check_bias_act(be);
	check_act_backward(be);
	check_silu_reference(be);
	/* The MLPs of --layers 7,6 with each activation (fused into the dense
	 * before it), then the layer kinds on their own. */
	check_model("dense:7,relu,dense:6,relu,dense", 100);
	check_model("dense:7,gelu,dense:6,gelu,dense", 101);
	check_model("dense:7,tanh,dense:6,tanh,dense", 102);
	check_model("dense:7,silu,dense:6,silu,dense", 114);
	check_model("dense:7,dropout:0.3,tanh,dense:6,gelu,dropout:0.5,dense", 103);
	check_model("flatten,dense:6,relu,dropout:0.4,flatten,dense", 104);
	/* Batch normalization in training mode: its statistics move with
	 * every input, and first in the model (no input gradient). */
	check_model("dense:7,batchnorm,tanh,dense:6,batchnorm,relu,dense", 110);
	check_model("batchnorm,dense:6,batchnorm,gelu,dropout:0.3,dense", 111);
	/* Convolutions and pooling: both paddings, strides, and the window
	 * kinds, on small images (fused and unfused activations). */
	const int img[3] = {5, 4, 2}, sq[3] = {5, 5, 2}, one[3] = {5, 4, 1};
	check_model_in("conv2d:3:3,tanh,maxpool2d:2,flatten,dense", img, 105);
	check_model_in("conv2d:2:3:2:valid,gelu,avgpool2d:2:1,dense", sq, 106);
	check_model_in("conv2d:2:2:2:same,tanh,globalavgpool,dense", one, 107);
	check_model_in("conv2d:3:3,relu,conv2d:2:3,maxpool2d:2:1,dense", img, 108);
	check_model_in("maxpool2d:2:1,conv2d:2:3:1:valid,dropout:0.3,avgpool2d:2,dense", sq, 109);
	check_model_in("conv2d:3:3,batchnorm,relu,maxpool2d:2,flatten,dense", img, 112);
	check_model_in("batchnorm,conv2d:2:3:2,batchnorm,tanh,globalavgpool,dense", img, 113);
	check_model_in("conv2d:3:3,batchnorm,silu,maxpool2d:2,flatten,dense:5,silu,dense", img, 115);
	/* The models above ran conv2d on oneDNN's kernels (the CPU's default);
	 * the same with im2col, sgemm and col2im (--cpu-conv im2col), each
	 * conv2d's windows and products one image at a time (the CPU's
	 * cols_budget does that to big images): the kernel's gradient summed
	 * over the blocks. */
	struct backend one_image = *backend_cpu_own();
	one_image.cols_budget = 1;
	model_be = &one_image;
	check_model_in("conv2d:3:3,tanh,maxpool2d:2,flatten,dense", img, 105);
	check_model_in("conv2d:3:3,batchnorm,relu,conv2d:2:3:2,gelu,globalavgpool,dense", img, 116);
	model_be = NULL;
	/* Residual blocks: an identity shortcut, a projection, one on the
	 * model's input (which needs no gradient), an output three layers take
	 * (the gradients summed), nesting, repetition, an alias (flatten) as
	 * the shortcut, and ResNet's own blocks on a small image. */
	check_model("dense:5,[dense:5,relu,dense:5],relu,dense", 120);
	check_model("dense:6,[dense:4,tanh,dense:6|dense:6],tanh,dense", 121);
	check_model("[dense:5,tanh,dense:5],dense", 122);
	check_model("dense:5,[[dense:5,tanh],dense:5],gelu,dense", 123);
	check_model("dense:6,[dense:6,[dense:6,tanh,dense:6],relu|dense:6,batchnorm],relu,dense", 124);
	check_model("dense:6,2*([dense:6,batchnorm,relu,dense:6,batchnorm],relu),dense", 125);
	check_model("[dense:5,dropout:0.3|flatten],tanh,dense", 126);
	const int res[3] = {4, 4, 2};
	check_layouts(7, 0, "dense:5,[dense:5,relu,dense:5],relu,dense", (const int[3]){1, 1, IN});
	check_layouts(7, 0, "dense:5,[[dense:5,tanh],dense:5],gelu,flatten,dense", (const int[3]){1, 1, IN});
	check_layouts(7, 0, "conv2d:3:3,tanh,[conv2d:3:3,relu,conv2d:3:3],relu,[conv2d:4:3:2,gelu|"
		      "conv2d:4:1:2],relu,globalavgpool,dense", res);
	/* (tanh and gelu for ResNet's relu: batch norm of 3 rows puts many
	 * relu inputs within the difference's step of 0) */
	check_model_in("conv2d:3:3,batchnorm,tanh,[conv2d:3:3,batchnorm,gelu,conv2d:3:3,batchnorm],"
		       "tanh,[conv2d:4:3:2,batchnorm,gelu,conv2d:4:3,batchnorm|conv2d:4:1:2,"
		       "batchnorm],relu,globalavgpool,dense", res, 127);
	return unit_done("test_gradcheck");
}
