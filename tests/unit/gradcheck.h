/* What the gradient checks (test_gradcheck.c) and the layer ops' checks
 * (test_layer_ops.c) share: a small batch, ROWS rows of IN inputs over
 * CLASSES classes, and uniform draws for its values. */
#pragma once
#include "rng.h"

#define IN 5
#define CLASSES 4
#define ROWS 3

/* Uniform in [lo, hi). */
static inline float uniform(struct rng *r, float lo, float hi)
{
	return lo + (hi - lo) * rng_uniform(r);
}
