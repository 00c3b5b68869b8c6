/* The sequence layers as a model describes them: their words and defaults
 * (the text parses back to itself), a ViT's variables under Keras' names
 * and shapes, the summary's sequence shapes and kept memory, and bad
 * descriptions named in one line. */
#include "backend.h"
#include "layer_spec.h"
#include "log.h"
#include "model.h"
#include "unit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse(const char *desc, struct layer_spec *s, int *n)
{
	user_error_clear();
	return layer_spec_parse(desc, "--model", s, LAYER_SPEC_MAX, n);
}

static void check_words(void)
{
	struct layer_spec s[LAYER_SPEC_MAX];
	char text[512], again[512];
	int n, m;
	EXPECT(parse("tokens,posembed,layernorm,attention:4,attention:2:causal,attention:8:0.1,"
		     "attention:3:causal:0.25,layernorm:1e-5,embedding:16,gelu_tanh,dense", s,
		     &n) == 0);
	EXPECT(n == 11);
	EXPECT_STR(layer_spec_text(s, n, text, sizeof(text)),
		   "tokens,posembed,layernorm:0.001,attention:4,attention:2:causal,"
		   "attention:8:0.1,attention:3:causal:0.25,layernorm:1e-05,embedding:16,"
		   "gelu_tanh,dense");
	EXPECT(s[2].eps == 1e-3f && s[7].eps == 1e-5f);
	EXPECT(s[3].units == 4 && !s[3].causal && s[3].rate == 0.0f);
	EXPECT(s[6].units == 3 && s[6].causal && s[6].rate == 0.25f);
	EXPECT(s[8].kind == LAYER_EMBEDDING && s[8].units == 16);
	EXPECT(layer_spec_act(&s[9]) == ACT_GELU_TANH);
	EXPECT(parse(text, s, &m) == 0 && m == n);
	EXPECT_STR(layer_spec_text(s, m, again, sizeof(again)), text);
	static const char *const bad[][2] = {
		{"tokens,attention,dense", "expected attention:HEADS[:causal][:DROPOUT]"},
		{"tokens,attention:0,dense", "expected attention:HEADS[:causal][:DROPOUT]"},
		{"tokens,attention:4:causal:causal,dense", "0 <= DROPOUT < 1"},
		{"tokens,attention:4:1.5,dense", "0 <= DROPOUT < 1"},
		{"tokens,attention:4:0.1:causal,dense", "0 <= DROPOUT < 1"},
		{"tokens,layernorm:0,dense", "layernorm[:EPSILON] with 0 < EPSILON < 1"},
		{"tokens,layernorm:x,dense", "layernorm[:EPSILON] with 0 < EPSILON < 1"},
		{"embedding,dense", "expected embedding:DIM"},
		{"tokens:3,dense", "expected tokens"},
		{"tokens,multiheadattention:4,dense", "did you mean 'attention'?"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT(parse(bad[i][0], s, &n) == -1);
		if (!strstr(user_error_text(), bad[i][1]))
			fprintf(stderr, "%s: got '%s'\n", bad[i][0], user_error_text());
		EXPECT(strstr(user_error_text(), bad[i][1]) != NULL);
		EXPECT(strchr(user_error_text(), '\n') == NULL);
	}
}

/* Plans desc on rows of shape in (vocab: token ids' range, 0: values):
 * 0, or -1 with the user error. */
static int plan(struct model *m, const char *desc, const int in[3], int vocab)
{
	struct layer_spec s[LAYER_SPEC_MAX];
	int n;
	EXPECT(parse(desc, s, &n) == 0);
	user_error_clear();
	return model_plan_vocab(m, s, n, in, 10, vocab, 1);
}

/* The ViT of jobs/fmnist-vit.conf's shape, one block: Keras' names and
 * shapes, in Keras' order of each layer's variables. */
static void check_vit_names(void)
{
	const int img[3] = {28, 28, 1};
	struct model m;
	EXPECT(plan(&m, "conv2d:64:4:4:valid,tokens,posembed,[layernorm,attention:4],"
			"[layernorm,dense:128,gelu,dense:64],layernorm,globalavgpool,dense",
		    img, 0) == 0);
	static const struct {
		const char *name;
		int ndim;
		long shape[3];
	} want[] = {
		{"conv2d/kernel", 3, {4, 4, 1}}, /* [4, 4, 1, 64]: the first three checked */
		{"conv2d/bias", 1, {64}},
		{"position_embedding/embeddings", 2, {49, 64}},
		{"layer_normalization/gamma", 1, {64}},
		{"layer_normalization/beta", 1, {64}},
		{"multi_head_attention/query/kernel", 3, {64, 4, 16}},
		{"multi_head_attention/query/bias", 2, {4, 16}},
		{"multi_head_attention/key/kernel", 3, {64, 4, 16}},
		{"multi_head_attention/key/bias", 2, {4, 16}},
		{"multi_head_attention/value/kernel", 3, {64, 4, 16}},
		{"multi_head_attention/value/bias", 2, {4, 16}},
		{"multi_head_attention/attention_output/kernel", 3, {4, 16, 64}},
		{"multi_head_attention/attention_output/bias", 1, {64}},
		{"layer_normalization_1/gamma", 1, {64}},
		{"layer_normalization_1/beta", 1, {64}},
		{"dense/kernel", 2, {64, 128}},
		{"dense/bias", 1, {128}},
		{"dense_1/kernel", 2, {128, 64}},
		{"dense_1/bias", 1, {64}},
		{"layer_normalization_2/gamma", 1, {64}},
		{"layer_normalization_2/beta", 1, {64}},
		{"dense_2/kernel", 2, {64, 10}},
		{"dense_2/bias", 1, {10}},
	};
	EXPECT(m.reg.n == (int)(sizeof(want) / sizeof(want[0])));
	for (int i = 0; i < m.reg.n && i < (int)(sizeof(want) / sizeof(want[0])); i++) {
		const struct param *p = &m.reg.p[i];
		if (strcmp(p->name, want[i].name))
			fprintf(stderr, "variable %d: %s, want %s\n", i, p->name, want[i].name);
		EXPECT_STR(p->name, want[i].name);
		EXPECT(i == 0 ? p->ndim == 4 : p->ndim == want[i].ndim);
		for (int d = 0; d < want[i].ndim; d++)
			EXPECT(p->shape[d] == want[i].shape[d]);
	}
	/* Keras' initial ranges: each attention kernel as EinsumDense makes it,
	 * Glorot-uniform over fans D and D (+-0.2165 at D = 64, not a 3-D
	 * convolution's fans); the position embedding's over 49 and 64 */
	float *w = calloc(m.reg.total, sizeof(float));
	model_glorot(&m, 7, w);
	for (int i = 0; i < m.reg.n; i++) {
		const struct param *p = &m.reg.p[i];
		double limit = strstr(p->name, "attention") ? sqrt(6.0 / 128.0)
			     : strstr(p->name, "position") ? sqrt(6.0 / (49.0 + 64.0)) : 0;
		if (!limit || strstr(p->name, "bias"))
			continue;
		float most = 0.0f;
		for (size_t j = 0; j < p->size; j++)
			most = fabsf(w[p->offset + j]) > most ? fabsf(w[p->offset + j]) : most;
		if (!(most <= limit && most > 0.98 * limit))
			fprintf(stderr, "%s: largest initial |value| %g, want just under %g\n", p->name,
				most, limit);
		EXPECT(most <= limit && most > 0.98 * limit);
	}
	free(w);
	/* what attention keeps: q, k, v, o (49x64 each) and p (4x49x49) a row */
	size_t attn = 4 * 49 * 64 + 4 * 49 * 49, ln = 2 * 49;
	EXPECT(m.keep_per_row == attn + 3 * ln);
	char names[MODEL_MAX_LAYERS][PARAM_NAME_LEN];
	model_layer_names(&m, names);
	EXPECT_STR(names[1], "reshape");
	EXPECT_STR(names[m.n_layers - 2], "global_average_pooling1d");
	EXPECT(m.layer[1].seq && m.layer[1].out[1] == 49 && m.layer[1].out[2] == 64);
	EXPECT(!m.layer[m.n_layers - 2].seq && m.layer[m.n_layers - 2].out_size == 64);
	/* the summary: sequences as Keras' (T, D), and the memory kept */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	model_summary(&m, f);
	fclose(f);
	EXPECT(strstr(text, "attention:4              49x64") != NULL);
	EXPECT(strstr(text, "what layers keep for their backward") != NULL);
	free(text);
}

static void check_bad_models(void)
{
	static const struct {
		const char *desc;
		int in[3], vocab;
		const char *want;
	} bad[] = {
		{"tokens,attention:5,globalavgpool,dense", {7, 7, 64}, 0,
		 "layer 2 (attention, written at character 8): its width 64 is not a multiple of "
		 "its 5 heads"},
		{"embedding:16,flatten,dense", {1, 1, 64}, 0,
		 "takes token ids, but the data's rows are pixels or values"},
		{"tokens,conv2d:8:3,flatten,dense", {4, 4, 3}, 0,
		 "layer 2 (conv2d, written at character 8): takes images [H, W, C], but its input "
		 "is a sequence of 16 tokens of 3"},
		{"tokens,maxpool2d:2,flatten,dense", {4, 4, 3}, 0, "is a sequence of 16 tokens"},
		{"tokens,dense", {1, 1, 784}, 0, "makes tokens of an image [H, W, C], but its input "
		 "is a flat row (give the data's image shape with --input-shape H,W,C)"},
		{"tokens,tokens,dense", {4, 4, 3}, 0, "but its input is a sequence already"},
		{"attention:2,flatten,dense", {4, 4, 2}, 0, "takes a sequence of tokens [T, D], but "
		 "its input is an image of 4x4x2"},
		{"posembed,flatten,dense", {1, 1, 8}, 0, "its input is a flat row of 1x1x8"},
		{"tokens,embedding:4,dense", {2, 2, 1}, 5, "takes a flat row of token ids [T]"},
		{"tokens,unembed", {2, 2, 4}, 10, "layer 2 (unembed): gives logits against an "
		 "embedding's table, but no embedding comes before it"},
		{"embedding:8,dense:6,unembed", {1, 1, 4}, 10, "layer 3 (unembed): takes tokens of "
		 "width 6, but the embedding (layer 1) it shares is 8 wide"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct model m;
		EXPECT(plan(&m, bad[i].desc, bad[i].in, bad[i].vocab) == -1);
		if (!strstr(user_error_text(), bad[i].want))
			fprintf(stderr, "%s: got '%s'\n", bad[i].desc, user_error_text());
		EXPECT(strstr(user_error_text(), bad[i].want) != NULL);
		EXPECT(strchr(user_error_text(), '\n') == NULL);
	}
}

/* The causal mask: no token's output reads a later token. Two rows alike
 * but for their last token give the same attention output (bit for bit)
 * on every token before it, and another on the last; without the mask
 * every token would differ. */
static void check_causal(void)
{
	enum { T = 5, D = 4, R = 2 };
	const int in[3] = {T, 1, D};
	struct model m;
	EXPECT(plan(&m, "tokens,attention:2:causal,flatten,dense", in, 0) == 0);
	const struct backend *be = backend_cpu();
	model_alloc(&m, be, R);
	float *w = malloc(m.reg.total * sizeof(float));
	model_glorot(&m, 3, w);
	be->copy_in(be, m.w, w, m.reg.total * sizeof(float));
	float x[R * T * D];
	int32_t y[R] = {0, 1};
	for (int i = 0; i < T * D; i++)
		x[i] = x[T * D + i] = sinf(0.7f * (float)i);
	for (int i = (T - 1) * D; i < T * D; i++)
		x[T * D + i] += 0.5f;
	model_set_batch(&m, x, y, R);
	model_forward(&m, R, 0, 1.0f);
	float out[R * T * D];
	be->copy_out(be, out, m.layer[1].y, sizeof(out));
	int same_before = 1, same_last = 1;
	for (int t = 0; t < T; t++)
		for (int d = 0; d < D; d++) {
			int same = out[t * D + d] == out[T * D + t * D + d];
			if (t < T - 1)
				same_before &= same;
			else
				same_last &= same;
		}
	EXPECT(same_before);
	EXPECT(!same_last);
	free(w);
	model_free(&m);
}

int main(void)
{
	check_words();
	check_vit_names();
	check_causal();
	check_bad_models();
	return unit_done("test_seq_model");
}
