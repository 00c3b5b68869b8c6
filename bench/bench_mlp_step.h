/* The default job's MLP step as bare matrix products: the products
 * model_forward and model_backward issue for one rank's rows, in their
 * order and on buffers of the same shapes (bench_gemm.h runs them). Shared
 * by bench_sgemm (their single-thread rate, bench.sh's baseline) and
 * bench_lockstep (ranks that step in turn, as training's do). Header-only:
 * each benchmark is one program.
 *
 * Letters: R rows per rank, D input width, C classes, I/O layer fan_in/out. */
#pragma once
#include "bench_gemm.h"
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IN_DIM 784  /* D: Fashion-MNIST images, 28 x 28 */
#define CLASSES 10  /* C */
#define MODEL_LAYERS_MAX (MAX_HIDDEN + 1)
#define MAX_CALLS (3 * MODEL_LAYERS_MAX)

/* The buffers of model.c for one rank's batch, host memory. */
struct step {
	int n_layers, in[MODEL_LAYERS_MAX], out[MODEL_LAYERS_MAX];
	float *x;                        /* (R, D) */
	float *w[MODEL_LAYERS_MAX];      /* (I, O) kernels */
	float *g[MODEL_LAYERS_MAX];      /* (I, O) kernel gradients */
	float *z[MODEL_LAYERS_MAX];      /* (R, O) pre-activations */
	float *act[MODEL_LAYERS_MAX];    /* (R, O) activations (hidden layers) */
	float *dlogits;                  /* (R, C) */
	float *scratch[2];               /* (R, max width) backward ping-pong */
	struct gemm call[MAX_CALLS];
	int n_calls;
};

static inline void add_call(struct step *s, int m, int n, int k, int ta, int tb, const float *a,
		     const float *b, float *c, const char *phase, int layer)
{
	struct gemm *g = &s->call[s->n_calls++];
	*g = (struct gemm){.m = m, .n = n, .k = k, .ta = ta, .tb = tb, .a = a, .b = b, .c = c,
			   .tag = layer};
	snprintf(g->what, sizeof(g->what), "%s layer %d", phase, layer);
}

/* The default job's model (config_defaults' hidden widths between D and C)
 * and the products model_forward then model_backward issue for R rows, in
 * their order and on the same buffers. */
static inline void step_init(struct step *s, int rows)
{
	struct config cfg;
	config_defaults(&cfg);
	memset(s, 0, sizeof(*s));
	s->n_layers = cfg.n_hidden + 1;
	int max_width = IN_DIM;
	for (int l = 0; l < s->n_layers; l++) {
		s->in[l] = l ? s->out[l - 1] : IN_DIM;
		s->out[l] = l < cfg.n_hidden ? cfg.hidden[l] : CLASSES;
		if (s->out[l] > max_width)
			max_width = s->out[l];
		s->w[l] = bench_rand((size_t)s->in[l] * s->out[l], -0.5f);
		s->g[l] = bench_rand((size_t)s->in[l] * s->out[l], -0.5f);
		s->z[l] = bench_rand((size_t)rows * s->out[l], -0.5f);
		s->act[l] = bench_rand((size_t)rows * s->out[l], -0.5f);
	}
	s->x = bench_rand((size_t)rows * IN_DIM, -0.5f);
	s->dlogits = bench_rand((size_t)rows * CLASSES, -0.5f);
	for (int i = 0; i < 2; i++)
		s->scratch[i] = bench_rand((size_t)rows * max_width, -0.5f);

	/* model_forward: z[l] (R,O) = in (R,I) @ w[l] (I,O). */
	for (int l = 0; l < s->n_layers; l++)
		add_call(s, rows, s->out[l], s->in[l], 0, 0, l ? s->act[l - 1] : s->x,
			 s->w[l], s->z[l], "forward", l);
	/* model_backward: g[l] (I,O) = in^T @ dz (R,O); da (R,I) = dz @ w[l]^T. */
	const float *dz = s->dlogits;
	for (int l = s->n_layers - 1; l >= 0; l--) {
		const float *in = l ? s->act[l - 1] : s->x;
		add_call(s, s->in[l], s->out[l], rows, 1, 0, in, dz, s->g[l], "weight grad", l);
		if (l == 0)
			break;
		float *da = s->scratch[l & 1];
		add_call(s, rows, s->in[l], s->out[l], 0, 1, dz, s->w[l], da, "input grad", l);
		dz = da;
	}
}

static inline void step_free(struct step *s)
{
	for (int l = 0; l < s->n_layers; l++) {
		free(s->w[l]);
		free(s->g[l]);
		free(s->z[l]);
		free(s->act[l]);
	}
	free(s->x);
	free(s->dlogits);
	free(s->scratch[0]);
	free(s->scratch[1]);
}

static inline double step_flops(const struct step *s)
{
	double f = 0;
	for (int i = 0; i < s->n_calls; i++)
		f += 2.0 * s->call[i].m * s->call[i].n * s->call[i].k;
	return f;
}

static inline void step_run(const struct step *s)
{
	for (int i = 0; i < s->n_calls; i++)
		gemm_run(&s->call[i]);
}
