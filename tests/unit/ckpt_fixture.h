/* The checkpoint the checkpoint tests write (test_ckpt.c) and edit
 * (test_ckpt_edited.c): N_VARS variables of rank 1 to 4 with random values
 * and root attributes of every kind, and buffers shaped like them. */
#pragma once
#include "ckpt.h"
#include "config.h"
#include "rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_VARS = 5, BIG = 2, CONV = 4 }; /* vars[BIG] is the largest dataset, vars[CONV]
					     * the rank-4 one */

struct ckpt_fixture {
	struct ckpt_var vars[N_VARS];
	struct ckpt_meta meta;
};

static inline void ckpt_fixture_init(struct ckpt_fixture *f)
{
	static const struct {
		const char *name;
		int ndim;
		long shape[SHAPE_MAX_RANK];
	} spec[N_VARS] = {
		{"dense/kernel", 2, {3, 4}},
		{"dense/bias", 1, {4}},
		{"dense_1/kernel", 2, {64, 32}},
		{"dense_1/bias/Adam", 1, {32}},
		{"conv2d/kernel", 4, {3, 3, 1, 32}}, /* Keras' [kh, kw, in, out] */
	};
	struct rng r;
	rng_init(&r, 2024, 0);
	memset(f, 0, sizeof(*f));
	for (int i = 0; i < N_VARS; i++) {
		struct ckpt_var *v = &f->vars[i];
		snprintf(v->name, sizeof(v->name), "%s", spec[i].name);
		v->ndim = spec[i].ndim;
		memcpy(v->shape, spec[i].shape, sizeof(v->shape));
		size_t n = ckpt_var_cells(v);
		v->data = malloc(n * sizeof(float));
		for (size_t j = 0; j < n; j++)
			v->data[j] = 4.0f * rng_uniform(&r) - 2.0f;
	}
	struct config cfg;
	config_defaults(&cfg);
	f->meta.global_step = 42;
	f->meta.epoch = 3;
	f->meta.step_in_epoch = 7;
	f->meta.batch = 128;
	f->meta.seed = 0xdeadbeefcafeull;
	f->meta.world_size = 4;
	f->meta.input_dim = 3;
	f->meta.classes = 32;
	f->meta.config = config_to_text(&cfg);
	snprintf(f->meta.created, sizeof(f->meta.created), "2025-01-02T03:04:05Z");
	snprintf(f->meta.version, sizeof(f->meta.version), "0.1.0-test");
	snprintf(f->meta.order, sizeof(f->meta.order), "feistel-1");
	snprintf(f->meta.input_shape, sizeof(f->meta.input_shape), "28,28,1");
}

static inline void ckpt_fixture_free(struct ckpt_fixture *f)
{
	for (int i = 0; i < N_VARS; i++)
		free(f->vars[i].data);
	free(f->meta.config);
}

/* Fresh zeroed buffers with the names and shapes of src. */
static inline void vars_like(struct ckpt_var *dst, const struct ckpt_var *src, int n)
{
	for (int i = 0; i < n; i++) {
		dst[i] = src[i];
		dst[i].data = calloc(ckpt_var_cells(&src[i]), sizeof(float));
	}
}

static inline void vars_free(struct ckpt_var *v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i].data);
}

static inline size_t var_bytes(const struct ckpt_var *v)
{
	return ckpt_var_cells(v) * sizeof(float);
}
