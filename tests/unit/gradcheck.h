/* What the gradient checks (test_gradcheck.c, test_gradcheck_seq.c) and
 * the layer ops' checks (test_layer_ops.c) share: a small batch, ROWS rows
 * of IN inputs over CLASSES classes, uniform draws for its values, and the
 * model's backward pass against central differences of its loss
 * (check_model_vocab), and training against evaluating (check_layouts). */
#pragma once
#include "backend.h"
#include "mathfn.h"
#include "model.h"
#include "rng.h"
#include "unit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IN 5
#define CLASSES 4
#define ROWS 3

/* Uniform in [lo, hi). */
static inline float uniform(struct rng *r, float lo, float hi)
{
	return lo + (hi - lo) * rng_uniform(r);
}

/* p[0 .. n) drawn uniform in [lo, hi), in order. */
static inline void fill_uniform(struct rng *r, float *p, size_t n, float lo, float hi)
{
	for (size_t i = 0; i < n; i++)
		p[i] = uniform(r, lo, hi);
}

#define MAX_IN 64
#define FD_EPS 1e-2f

/* Where the model bends after the last forward pass, packed into kinks:
 * the sign of every relu's input and the position of every max-pool
 * window's max. Returns how many entries there are. */
static inline size_t kinks_of(const struct model *m, int rows, signed char *kinks)
{
	size_t k = 0;
	for (int l = 0; l < m->n_layers; l++) {
		const struct layer *L = &m->layer[l];
		const float *x = L->src[0] < 0 ? m->x : m->layer[L->src[0]].y;
		if (L->spec.kind == LAYER_OF_ACT(ACT_RELU) && !x)
			x = L->y; /* its input dropped (layer.drops_y): the same signs */
		if (L->spec.kind == LAYER_OF_ACT(ACT_RELU))
			for (size_t i = 0; i < (size_t)rows * L->in_size; i++, k++)
				if (kinks)
					kinks[k] = x[i] > 0.0f ? 1 : -1;
		if (L->spec.kind == LAYER_MAXPOOL2D)
			for (int r = 0; r < rows; r++)
				for (int oy = 0; oy < L->win.oh; oy++)
					for (int ox = 0; ox < L->win.ow; ox++)
						for (int c = 0; c < L->win.c; c++, k++)
							if (kinks)
								kinks[k] = (signed char)win_argmax(
									x, &L->win, (size_t)r, oy, ox, c);
	}
	return k;
}

/* Loss sum of the loaded batch at the current weights, in training mode
 * (dropout on, its masks fixed by the model's position). When signs is not
 * NULL it receives the kinks (kinks_of). */
static inline float loss_at(struct model *m, signed char *signs)
{
	float stats[2];
	model_forward(m, ROWS, 1, 1.0f);
	model_take_stats(m, stats);
	if (signs)
		kinks_of(m, ROWS, signs);
	return stats[0];
}

/* Every gradient entry of the model desc on rows of shape in ({H, W, C},
 * at most MAX_IN values) against central differences of the loss sum, in
 * training mode. Coordinates whose +-eps perturbation crosses a kink (a
 * relu's input crosses 0, a max-pool window's max moves) are skipped and
 * counted. */
static const struct backend *model_be; /* check_model_vocab's backend: the CPU's */

static inline void check_model_vocab(const char *desc, const int in[3], int vocab,
				     uint64_t seed)
{
	const struct backend *be = model_be ? model_be : backend_cpu();
	struct layer_spec spec[MODEL_MAX_LAYERS];
	int n = 0;
	struct model m;
	const int dim = in[0] * in[1] * in[2];
	EXPECT(layer_spec_parse(desc, "test", spec, MODEL_MAX_LAYERS, &n) == 0);
	EXPECT(model_plan_vocab(&m, spec, n, in, CLASSES, vocab, seed) == 0);
	model_alloc(&m, be, ROWS);
	model_set_position(&m, 17, 5);
	size_t P = m.reg.total;

	struct rng r;
	rng_init(&r, seed, 7);
	float *w = calloc(P, sizeof(float));
	for (int i = 0; i < m.reg.n; i++)
		for (size_t j = 0; j < m.reg.p[i].size; j++)
			w[m.reg.p[i].offset + j] = uniform(&r, -0.9f, 0.9f);
	float x[ROWS * MAX_IN];
	int32_t y[ROWS];
	for (int i = 0; i < ROWS * dim; i++) /* values, or token ids */
		x[i] = vocab ? (float)rng_below(&r, (uint64_t)vocab) : uniform(&r, -1.5f, 1.5f);
	for (int i = 0; i < ROWS; i++)
		y[i] = (int32_t)rng_below(&r, CLASSES);
	be->copy_in(be, m.w, w, P * sizeof(float));
	model_set_batch(&m, x, y, ROWS);

	float stats[2];
	model_forward(&m, ROWS, 1, 1.0f);
	model_take_stats(&m, stats);
	model_backward(&m, ROWS, NULL, NULL);
	float *g = malloc(P * sizeof(float));
	be->copy_out(be, g, m.g, P * sizeof(float));
	size_t n_signs = kinks_of(&m, ROWS, NULL);
	signed char *base = malloc(n_signs + 1), *plus = malloc(n_signs + 1),
		    *minus = malloc(n_signs + 1);
	float loss0 = loss_at(&m, base);
	EXPECT_NEAR(loss0, stats[0], 1e-6);

	int checked = 0, skipped = 0;
	double max_fd = 0.0;
	/* The trainable variables: the loss in training mode does not read
	 * the others (batchnorm's moving statistics). */
	for (int i = 0; i < m.reg.n_trainable; i++) {
		const struct param *p = &m.reg.p[i];
		for (size_t j = 0; j < p->size; j++) {
			size_t k = p->offset + j;
			/* The CPU backend's memory is host memory: poke it directly. */
			m.w[k] = w[k] + FD_EPS;
			float lp = loss_at(&m, plus);
			m.w[k] = w[k] - FD_EPS;
			float lm = loss_at(&m, minus);
			m.w[k] = w[k];
			if (memcmp(plus, base, n_signs) || memcmp(minus, base, n_signs)) {
				skipped++;
				continue;
			}
			float fd = (float)(((double)lp - (double)lm) / (2.0 * FD_EPS));
			double tol = 2e-2 * fmax(fabs(fd), fabs(g[k])) + 1e-3;
			int ok = fabs((double)g[k] - fd) <= tol;
			if (!ok)
				fprintf(stderr, "%s: %s[%zu]: backward %.7g, central difference %.7g\n",
					desc, p->name, j, g[k], fd);
			EXPECT(ok);
			max_fd = fmax(max_fd, fabs(fd));
			checked++;
		}
	}
	/* Only relu and max-pool have kinks; even there most coordinates must
	 * be checkable. */
	if (!n_signs)
		EXPECT(skipped == 0);
	EXPECT(checked >= (int)(0.8 * (checked + skipped)));
	EXPECT(max_fd > 1e-2); /* the check compared real gradients, not zeros */
	printf("gradcheck %s: %d entries checked, %d skipped at kinks\n", desc, checked, skipped);

	/* grad_scale scales every gradient linearly. */
	model_forward(&m, ROWS, 1, 0.5f);
	model_take_stats(&m, stats);
	model_backward(&m, ROWS, NULL, NULL);
	float *g_half = malloc(P * sizeof(float));
	be->copy_out(be, g_half, m.g, P * sizeof(float));
	int scaled = 1;
	for (size_t k = 0; k < P; k++)
		if (fabsf(g_half[k] - 0.5f * g[k]) > 1e-6f * (1.0f + fabsf(g[k])))
			scaled = 0;
	EXPECT(scaled);

	free(g_half);
	free(base);
	free(plus);
	free(minus);
	free(g);
	free(w);
	model_free(&m);
}

/* The same on rows of values. */
static inline void check_model_in(const char *desc, const int in[3], uint64_t seed)
{
	check_model_vocab(desc, in, 0, seed);
}



/* Evaluating lays the outputs out apart from training (forward only, the
 * arena's places reused sooner; attention's kept tensors planned apart for
 * each layout): a model without dropout or batchnorm gives the same loss,
 * bit for bit, training and evaluating, either way and back again, on as
 * many rows as it was allocated for (more when evaluating than training).
 * kept: the model must keep tensors for its backward (attention's). */
static inline void check_layouts(int rows, int kept, const char *desc, const int in[3])
{
	const struct backend *be = backend_cpu();
	struct layer_spec spec[MODEL_MAX_LAYERS];
	struct model m;
	int n = 0;
	const int dim = in[0] * in[1] * in[2];
	EXPECT(rows > ROWS && rows <= 8 && dim <= MAX_IN);
	EXPECT(layer_spec_parse(desc, "test", spec, MODEL_MAX_LAYERS, &n) == 0);
	EXPECT(model_plan(&m, spec, n, in, CLASSES, 3) == 0);
	EXPECT(m.eval_per_row < m.arena_per_row);
	EXPECT(!kept || m.keep_per_row > 0);
	m.train_rows = ROWS;
	model_alloc(&m, be, rows);
	float *w = calloc(m.reg.total, sizeof(float)), x[8 * MAX_IN];
	int32_t y[8];
	model_glorot(&m, 9, w);
	be->copy_in(be, m.w, w, m.reg.total * sizeof(float));
	struct rng r;
	rng_init(&r, 4, 1);
	fill_uniform(&r, x, (size_t)rows * dim, -1.0f, 1.0f);
	for (int i = 0; i < rows; i++)
		y[i] = (int32_t)rng_below(&r, CLASSES);
	model_set_batch(&m, x, y, rows);
	float train[2], eval[2], again[2], all[2];
	model_forward(&m, ROWS, 1, 1.0f);
	model_take_stats(&m, train);
	model_backward(&m, ROWS, NULL, NULL);
	model_forward(&m, ROWS, 0, 1.0f);
	model_take_stats(&m, eval);
	model_forward(&m, ROWS, 1, 1.0f);
	model_take_stats(&m, again);
	model_forward(&m, rows, 0, 1.0f);
	model_take_stats(&m, all);
	EXPECT(train[0] == eval[0] && train[1] == eval[1]);
	EXPECT(again[0] == train[0] && all[0] > train[0]);
	free(w);
	model_free(&m);
}
