/* Dropout is off in evaluation and on in training: evaluating (training 0),
 * a model with dropout gives bitwise the loss and correct count of the same
 * model without it, at any position (step, first global row), while
 * training it does not. (mpi.model's 1-rank/2-rank comparison would pass a
 * dropout in evaluation keyed by the global row.) */
#include "backend.h"
#include "layer_spec.h"
#include "model.h"
#include "unit.h"

#include <stdint.h>

enum { ROWS = 8, DIM = 5 };

static void build(struct model *m, const char *text, const struct backend *be)
{
	struct layer_spec spec[8];
	int n = 0;
	const int in[3] = {1, 1, DIM};
	memset(m, 0, sizeof(*m));
	EXPECT(layer_spec_parse(text, "test", spec, 8, &n) == 0);
	EXPECT(model_plan(m, spec, n, in, 3, 1) == 0);
	model_alloc(m, be, ROWS);
	model_glorot(m, 9, m->w);
}

/* Loss and correct count (out) of one forward pass at (step, row0). */
static void run(struct model *m, const float *x, const int32_t *y, long step, long row0,
		int training, float out[2])
{
	model_set_batch(m, x, y, ROWS);
	model_set_position(m, step, row0);
	model_forward(m, ROWS, training, training ? 1.0f / ROWS : 0.0f);
	model_take_stats(m, out);
}

int main(void)
{
	const struct backend *be = backend_cpu();
	struct model drop, plain;
	build(&drop, "dense:6,relu,dropout:0.5,dense", be);
	build(&plain, "dense:6,relu,dense", be);
	EXPECT(drop.reg.total == plain.reg.total);
	memcpy(drop.w, plain.w, sizeof(float) * plain.reg.total); /* the same variables */
	float x[ROWS * DIM];
	int32_t y[ROWS];
	for (int i = 0; i < ROWS * DIM; i++)
		x[i] = (float)((i * 7) % 11) * 0.3f - 1.2f;
	for (int i = 0; i < ROWS; i++)
		y[i] = i % 3;
	float eval_a[2], eval_b[2], want[2], train[2];
	run(&drop, x, y, 3, 0, 0, eval_a);
	run(&drop, x, y, 9, 5, 0, eval_b);
	run(&plain, x, y, 3, 0, 0, want);
	run(&drop, x, y, 3, 0, 1, train);
	EXPECT(!memcmp(eval_a, want, sizeof(want)));
	EXPECT(!memcmp(eval_b, want, sizeof(want)));
	EXPECT(memcmp(train, want, sizeof(want))); /* dropout does act in training */
	model_free(&drop);
	model_free(&plain);
	return unit_done("test_dropout");
}
