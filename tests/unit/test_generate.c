/* Decoding a token at a time with the keys and values cached
 * (model_forward_token, generate.c) against the whole window's forward:
 * for GPTs of several shapes (heads of odd width, two blocks, a relu MLP
 * whose output the plan drops, dropout at evaluation, gelu_tanh), every
 * token's logits within 1e-5 normwise of the full forward's, for every
 * position of the window; a second pass over other ids (the cache's old
 * keys overwritten as generate.c's slide does) the same; and what cannot
 * run a token at a time named. */
#include "backend.h"
#include "generate.h"
#include "gradcheck.h"
#include "layer_spec.h"
#include "log.h"
#include "model.h"
#include "rng.h"
#include "unit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOCAB 37

static int plan(struct model *m, const char *desc, int T)
{
	struct layer_spec s[LAYER_SPEC_MAX];
	int n;
	const int in[3] = {1, 1, T};
	user_error_clear();
	EXPECT(layer_spec_parse(desc, "--model", s, LAYER_SPEC_MAX, &n) == 0);
	return model_plan_vocab(m, s, n, in, VOCAB, VOCAB, 1);
}

/* The largest normwise difference of the token-at-a-time logits from the
 * full forward's, over every position, for ids drawn under seed. */
static double cached_vs_full(struct model *m, const float *w, int T, uint64_t seed,
			     float **apart)
{
	const struct backend *be = m->be;
	struct rng r;
	rng_init(&r, seed, 0);
	float *x = malloc(sizeof(float) * (size_t)T), *full = malloc(sizeof(float) * (size_t)T * VOCAB);
	int32_t *y = calloc((size_t)T, sizeof(int32_t));
	float *tok = malloc(sizeof(float) * VOCAB);
	for (int t = 0; t < T; t++)
		x[t] = (float)rng_below(&r, VOCAB);
	be->copy_in(be, m->w, w, sizeof(float) * m->reg.total);
	model_set_batch(m, x, y, 1);
	model_forward(m, 1, 0, 0.0f);
	const struct layer *last = &m->layer[m->n_layers - 1];
	be->copy_out(be, full, last->y, sizeof(float) * (size_t)T * VOCAB);
	double worst = 0.0;
	*apart = model_decode_begin(m, *apart);
	for (int t = 0; t < T; t++) {
		model_forward_token(m, t);
		be->copy_out(be, tok, m->layer[m->n_layers - 1].y + (size_t)t * VOCAB,
			     sizeof(float) * VOCAB);
		double diff = 0.0, scale = 0.0;
		for (int j = 0; j < VOCAB; j++) {
			diff = fmax(diff, fabs((double)tok[j] - full[t * VOCAB + j]));
			scale = fmax(scale, fabs((double)full[t * VOCAB + j]));
		}
		worst = fmax(worst, diff / scale);
	}
	free(x);
	free(full);
	free(y);
	free(tok);
	return worst;
}

static void check_gpt(const char *desc, int T)
{
	struct model m;
	EXPECT(plan(&m, desc, T) == 0);
	char why[160];
	for (int i = 0; i < m.n_layers; i++)
		EXPECT(layer_token_ok(&m.layer[i], why, sizeof(why)) == 0);
	m.train_rows = 1;
	model_alloc(&m, backend_cpu(), 1);
	float *w = malloc(sizeof(float) * m.reg.total);
	model_glorot(&m, 5, w);
	struct rng r;
	rng_init(&r, 9, 0);
	/* Biases, gammas and betas off their initial 0 and 1. */
	for (int i = 0; i < m.reg.n_trainable; i++)
		if (m.reg.p[i].ndim == 1 || strstr(m.reg.p[i].name, "bias"))
			fill_uniform(&r, w + m.reg.p[i].offset, m.reg.p[i].size, -0.5f, 0.5f);
	float *apart = NULL; /* the second pass in the first's places */
	double a = cached_vs_full(&m, w, T, 1, &apart), b = cached_vs_full(&m, w, T, 2, &apart);
	model_decode_end(&m, apart);
	printf("%s (T %d): cached vs full %.2e, again over other ids %.2e\n", desc, T, a, b);
	EXPECT(a <= 1e-5 && b <= 1e-5);
	free(w);
	model_free(&m);
}

static void check_refused(const char *desc, int layer, const char *want)
{
	struct model m;
	char why[160];
	EXPECT(plan(&m, desc, 8) == 0);
	EXPECT(layer_token_ok(&m.layer[layer], why, sizeof(why)) == -1);
	EXPECT(strstr(why, want) != NULL);
}

int main(void)
{
	check_gpt("embedding:12,posembed,[layernorm:1e-5,attention:3:causal],"
		  "[layernorm:1e-5,dense:48,gelu,dense:12],layernorm:1e-5,dense", 9);
	/* dropout before attention: its planned output's place could be the
	 * cache's */
	check_gpt("embedding:14,posembed,2*([layernorm,attention:2:causal:0.3],"
		  "[layernorm,dense:20,relu,dropout:0.2,dense:14]),layernorm,dense:10,gelu_tanh,dense",
		  16);
	/* tied embeddings: the logits against the table the ids read */
	check_gpt("embedding:12,posembed,[layernorm:1e-5,attention:3:causal],layernorm:1e-5,unembed",
		  11);
	check_refused("embedding:8,posembed,[layernorm,attention:2],layernorm,dense", 3,
		      "is not causal");
	check_refused("embedding:8,globalavgpool,dense", 1, "mixes a row's tokens");
	return unit_done("test_generate");
}
