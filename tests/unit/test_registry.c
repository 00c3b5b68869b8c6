/* The default model's parameter registry (names, shapes, aligned flat layout,
 * signatures) and its Glorot initialisation. */
#include "backend.h"
#include "model.h"
#include "params.h"
#include "unit.h"
#include "config.h"
#include "log.h"
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

static void check_registry(const struct model *m)
{
	static const struct {
		const char *name;
		int ndim;
		long shape[SHAPE_MAX_RANK];
	} want[] = {
		{"dense/kernel", 2, {784, 256}}, {"dense/bias", 1, {256, 0}},
		{"dense_1/kernel", 2, {256, 256}}, {"dense_1/bias", 1, {256, 0}},
		{"dense_2/kernel", 2, {256, 10}}, {"dense_2/bias", 1, {10, 0}},
	};
	const struct params *reg = &m->reg;
	EXPECT(reg->n == 6);
	size_t sum = 0, end = 0;
	for (int i = 0; i < reg->n && i < 6; i++) {
		const struct param *p = &reg->p[i];
		EXPECT_STR(p->name, want[i].name);
		EXPECT(p->ndim == want[i].ndim);
		EXPECT(!memcmp(p->shape, want[i].shape, sizeof(p->shape)));
		EXPECT(p->size == shape_cells(want[i].ndim, want[i].shape));
		EXPECT(p->offset % 16 == 0);
		EXPECT(p->offset >= end); /* after the previous variable: increasing, disjoint */
		end = p->offset + p->size;
		sum += p->size;
		EXPECT(strstr(p->name, "replica") == NULL);
		EXPECT(params_find(reg, want[i].name) == p);
	}
	EXPECT(reg->total >= sum);
	EXPECT(reg->total == end);
	EXPECT(params_find(reg, "dense_3/kernel") == NULL);

	/* The model's layer table points at the same slots. */
	EXPECT(m->n_layers == 5); /* dense, relu, dense, relu, dense */
	EXPECT(m->layer[0].var[0] == reg->p[0].offset && m->layer[0].var[1] == reg->p[1].offset);
	EXPECT(m->layer[4].var[0] == reg->p[4].offset && m->layer[4].var[1] == reg->p[5].offset);
	EXPECT(m->layer[2].in_size == 256 && m->layer[2].out_size == 256);
	EXPECT(m->layer[4].in_size == 256 && m->layer[4].out_size == 10);
	EXPECT(m->layer[1].n_vars == 0 && m->layer[1].fused && m->layer[3].fused);
}

static void check_names(void)
{
	char buf[32];
	params_layer_name("dense", 0, buf, sizeof(buf));
	EXPECT_STR(buf, "dense");
	params_layer_name("dense", 1, buf, sizeof(buf));
	EXPECT_STR(buf, "dense_1");
	params_layer_name("dense", 3, buf, sizeof(buf));
	EXPECT_STR(buf, "dense_3");
	/* Keras counts each kind apart: conv2d, conv2d_1, then dense, dense_1;
	 * layers without variables take no name. */
	struct layer_spec spec[MODEL_MAX_LAYERS];
	int n = 0;
	struct model m;
	const int in[3] = {8, 8, 1};
	EXPECT(layer_spec_parse("conv2d:4:3,relu,conv2d:2:3,maxpool2d:2,flatten,dense:5,dropout:0.5,dense",
				"test", spec, MODEL_MAX_LAYERS, &n) == 0);
	EXPECT(model_plan(&m, spec, n, in, 3, 1) == 0);
	const char *want[] = {"conv2d/kernel", "conv2d/bias", "conv2d_1/kernel", "conv2d_1/bias",
			      "dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"};
	EXPECT(m.reg.n == 8);
	for (int i = 0; i < 8 && i < m.reg.n; i++)
		EXPECT_STR(m.reg.p[i].name, want[i]);
	/* conv2d kernels in Keras' shape [kh, kw, in, out] */
	EXPECT(m.reg.p[0].ndim == 4 && m.reg.p[0].size == 3 * 3 * 1 * 4);
	EXPECT(m.reg.p[2].ndim == 4 && m.reg.p[2].shape[0] == 3 && m.reg.p[2].shape[1] == 3 &&
	       m.reg.p[2].shape[2] == 4 && m.reg.p[2].shape[3] == 2);
	EXPECT(m.reg.p[4].shape[0] == 4 * 4 * 2 && m.reg.p[4].shape[1] == 5);
	const long dims[SHAPE_MAX_RANK] = {784, 256};
	shape_text(2, dims, buf, sizeof(buf));
	EXPECT_STR(buf, "[784,256]");
	shape_text(1, dims, buf, sizeof(buf));
	EXPECT_STR(buf, "[784]");
}

/* Variables of rank 1 to 4 (a conv2d kernel as Keras stores it,
 * [kh, kw, in, out]): their size, text and aligned place in the flat buffer. */
static void check_ranks(void)
{
	struct params reg;
	params_init(&reg);
	const long kernel[SHAPE_MAX_RANK] = {3, 3, 1, 32}, cube[3] = {2, 3, 5}, bias[1] = {32};
	params_add(&reg, "conv2d/kernel", 4, kernel);
	params_add(&reg, "conv2d/bias", 1, bias);
	params_add(&reg, "cube", 3, cube);
	EXPECT(reg.n == 3 && reg.p[0].ndim == 4 && reg.p[2].ndim == 3);
	EXPECT(reg.p[0].size == 3 * 3 * 1 * 32 && reg.p[2].size == 30);
	EXPECT(shape_cells(4, kernel) == 288);
	EXPECT(reg.p[1].offset == 288 && reg.p[2].offset == 320);
	EXPECT(reg.p[2].shape[3] == 0); /* zero past ndim */
	EXPECT(params_count(&reg) == 288 + 32 + 30);
	char buf[64];
	shape_text(reg.p[0].ndim, reg.p[0].shape, buf, sizeof(buf));
	EXPECT_STR(buf, "[3,3,1,32]");
	params_signature(&reg, buf, sizeof(buf));
	EXPECT(strstr(buf, "conv2d/kernel[3,3,1,32];conv2d/bias[32];cube[2,3,5];") == buf);
	/* A shape whose product overflows, a negative one, ranks 0 and 5. */
	const long huge[2] = {1L << 40, 1L << 40}, neg[2] = {4, -1};
	EXPECT(shape_fits(4, kernel, 288) && !shape_fits(4, kernel, 287));
	EXPECT(!shape_fits(2, huge, (size_t)1 << 40) && !shape_fits(2, neg, 100));
	EXPECT(!shape_fits(0, kernel, 100) && !shape_fits(5, kernel, 1000));
}

static void check_signature(const struct backend *be, const struct model *m)
{
	const int same[2] = {256, 256}, other[2] = {256, 128}, deeper[3] = {256, 256, 256};
	struct model twin, narrow, deep, gelu;
	model_init(&twin, be, 784, 10, same, 2, ACT_RELU, 1);
	model_init(&narrow, be, 784, 10, other, 2, ACT_RELU, 1);
	model_init(&deep, be, 784, 10, deeper, 3, ACT_RELU, 1);
	model_init(&gelu, be, 784, 10, same, 2, ACT_GELU, 1);
	char a[4096], b[4096];
	params_signature(&m->reg, a, sizeof(a));
	params_signature(&twin.reg, b, sizeof(b));
	EXPECT_STR(a, b);
	EXPECT(strstr(a, "dense/kernel[784,256];") == a);
	EXPECT(strstr(a, "dense_2/bias[10];") != NULL);
	params_signature(&narrow.reg, b, sizeof(b));
	EXPECT(strcmp(a, b) != 0);
	params_signature(&deep.reg, b, sizeof(b));
	EXPECT(strcmp(a, b) != 0);
	/* The activation has no variables: same registry. */
	params_signature(&gelu.reg, b, sizeof(b));
	EXPECT_STR(a, b);
	model_free(&twin);
	model_free(&narrow);
	model_free(&deep);
	model_free(&gelu);
}

static void check_glorot(const struct model *m)
{
	size_t P = m->reg.total;
	float *w1 = malloc(P * sizeof(float)), *w2 = malloc(P * sizeof(float));
	float *w3 = malloc(P * sizeof(float));
	model_glorot(m, 42, w1);
	model_glorot(m, 42, w2);
	model_glorot(m, 43, w3);
	EXPECT(memcmp(w1, w2, P * sizeof(float)) == 0);
	EXPECT(memcmp(w1, w3, P * sizeof(float)) != 0);

	for (int l = 0; l < m->n_layers; l++) {
		const struct layer *d = &m->layer[l];
		if (d->spec.kind != LAYER_DENSE)
			continue;
		double limit = sqrt(6.0 / (double)(d->in_size + d->out_size));
		const float *k = w1 + d->var[0], *b = w1 + d->var[1];
		size_t n = d->in_size * d->out_size, inside = 0, positive = 0;
		double mx = 0.0, sum = 0.0;
		for (size_t i = 0; i < n; i++) {
			inside += fabs(k[i]) <= limit;
			positive += k[i] > 0.0f;
			mx = fmax(mx, fabs(k[i]));
			sum += k[i];
		}
		EXPECT(inside == n);
		/* Uniform over [-limit, limit]: the extremes are nearly reached, the
		 * signs are balanced and the mean is near 0 (2560+ draws a layer). */
		EXPECT(mx > 0.98 * limit);
		EXPECT(positive > 0.45 * n && positive < 0.55 * n);
		EXPECT(fabs(sum / n) < 0.05 * limit);
		int zero = 1;
		for (size_t j = 0; j < d->out_size; j++)
			zero &= b[j] == 0.0f;
		EXPECT(zero);
	}
	free(w1);
	free(w2);
	free(w3);
}

/* ZeRO-1's shards: for any total and rank count, the shards tile [0, T)
 * in rank order without overlap or hole: each starts where the one before
 * it ended, aligned (at r * each); every shard but the last non-empty one
 * is full length; an empty shard starts at T (never before: that would be
 * a hole nobody owns). One rank is the whole. */
static void check_shards(void)
{
	const size_t totals[] = {1, 15, 16, 17, 51, 269322, 1000003};
	for (size_t k = 0; k < sizeof(totals) / sizeof(totals[0]); k++)
		for (int ranks = 1; ranks <= 9; ranks++) {
			size_t T = totals[k], at = 0, each = 0;
			for (int r = 0; r < ranks; r++) {
				struct shard s;
				shard_plan(&s, T, r, ranks);
				if (r == 0)
					each = s.each;
				EXPECT(s.total == T && s.ranks == ranks && s.each == each);
				EXPECT(ranks == 1 || s.each % PARAM_ALIGN == 0);
				EXPECT((size_t)ranks * s.each >= T);
				EXPECT(s.first == at); /* where the one before ended */
				EXPECT(s.first + s.len <= T);
				if (s.len == 0)
					EXPECT(s.first == T); /* empty: at the end, no hole */
				else
					EXPECT(s.first == (size_t)r * s.each &&
					       (s.len == s.each || s.first + s.len == T));
				at = s.first + s.len;
				if (ranks == 1)
					EXPECT(s.first == 0 && s.len == T);
			}
			EXPECT(at == T); /* every value owned */
		}
	struct shard s;
	shard_plan(&s, 51, 4, 5); /* 16 a shard: rank 4 starts past 51 */
	EXPECT(s.len == 0 && s.first == 51);
	shard_plan(&s, 51, 3, 5);
	EXPECT(s.first == 48 && s.len == 3);
}

/* The text of file path (malloc'd). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	EXPECT(f != NULL);
	if (!f)
		return NULL;
	char *text = calloc(1, 1 << 16);
	size_t n = fread(text, 1, (1 << 16) - 1, f);
	fclose(f);
	text[n] = 0;
	return text;
}

/* jobs/fmnist-resnet.conf, read as mtrain reads --config (its model spread
 * over lines): ResNet-20 v1 with projection shortcuts. Its variables are
 * named as Keras names the layers of a functional model written in that
 * order (main path before shortcut), its stages give 28x28x16, 14x14x32
 * and 7x7x64, and the activation arena reuses buffers. An add of two
 * shapes is refused with one line naming the block. */
static void check_resnet(void)
{
	struct config cfg;
	config_defaults(&cfg);
	char *text = slurp(MTRAIN_SOURCE_DIR "/jobs/fmnist-resnet.conf");
	EXPECT(text && config_parse_text(&cfg, text, "fmnist-resnet.conf") == 0);
	free(text);
	struct layer_spec spec[MODEL_MAX_LAYERS];
	int n = 0;
	struct model m;
	const int in[3] = {28, 28, 1};
	EXPECT(model_specs(&cfg, spec, &n) == 0);
	EXPECT(n == 3 + 9 * 7 + 2 * 2 + 2);
	EXPECT(model_plan(&m, spec, n, in, 10, 1) == 0);
	EXPECT(params_count(&m.reg) == 274538); /* Keras' ResNet-20 v1, with a batchnorm on
						  * each projection, for one channel */
	const struct param *p = params_find(&m.reg, "conv2d_8/kernel"); /* stage 2's main */
	EXPECT(p && p->shape[0] == 3 && p->shape[2] == 32 && p->shape[3] == 32);
	p = params_find(&m.reg, "conv2d_9/kernel"); /* its shortcut, after its main path */
	EXPECT(p && p->shape[0] == 1 && p->shape[2] == 16 && p->shape[3] == 32);
	EXPECT(params_find(&m.reg, "conv2d_20/kernel") && !params_find(&m.reg, "conv2d_21/kernel"));
	EXPECT(params_find(&m.reg, "batch_normalization_9/moving_variance") != NULL);
	EXPECT(params_find(&m.reg, "dense/kernel") && !params_find(&m.reg, "dense_1/kernel"));
	EXPECT(m.layer[2].out[0] == 28 && m.layer[2].out[2] == 16);
	int adds = 0;
	for (int i = 0; i < n; i++)
		if (m.layer[i].spec.kind == LAYER_ADD) {
			adds++;
			EXPECT(memcmp(m.layer[i].in, m.layer[i].out, sizeof(m.layer[i].in)) == 0);
		}
	EXPECT(adds == 9);
	EXPECT(m.layer[n - 3].out[0] == 7 && m.layer[n - 3].out[2] == 64);
	/* Training keeps every layer's input for its backward, but the
	 * gradients and what no backward reads share places. */
	EXPECT(m.arena_per_row < m.unplanned_per_row);
	printf("resnet-20: arena %zu floats a row, %zu unplanned\n", m.arena_per_row,
	       m.unplanned_per_row);

	user_error_clear();
	EXPECT(layer_spec_parse("conv2d:8:3,[conv2d:16:3,batchnorm],relu,dense", "--model", spec,
				MODEL_MAX_LAYERS, &n) == 0);
	EXPECT(model_plan(&m, spec, n, in, 10, 1) == -1);
	EXPECT(strstr(user_error_text(), "--model: the block at character 12 adds its main path's "
		      "28x28x16 to its input's 28x28x8: an add needs one shape (a projection shortcut "
		      "changes it, e.g. [MAIN|conv2d:16:1:1,batchnorm])") != NULL);
	user_error_clear();
	EXPECT(layer_spec_parse("conv2d:8:3,[conv2d:16:3:2,batchnorm],relu,dense", "--model", spec,
				MODEL_MAX_LAYERS, &n) == 0);
	EXPECT(model_plan(&m, spec, n, in, 10, 1) == -1);
	EXPECT(strstr(user_error_text(), "14x14x16 to its input's 28x28x8: an add needs one shape "
		      "(a projection shortcut changes it, e.g. [MAIN|conv2d:16:1:2,batchnorm])"));
	user_error_clear();
}

/* model_check_images: conv2d and the pools on flat rows without
 * --input-shape (each row would be a 1x1 image) is one line suggesting
 * --input-shape, with a shape that fits where one is plain; images, or
 * --input-shape, or no such layer, are fine. */
static void check_flat_images(void)
{
	static const struct {
		const char *model, *input_shape;
		int data[3];
		const char *want; /* NULL: fine */
	} cases[] = {
		{"conv2d:8:3,relu,flatten,dense", "", {1, 1, 784},
		 "--model: layer 1 (conv2d) needs an image, but the data's rows are flat [784]: "
		 "give their shape with --input-shape H,W,C (e.g. 28,28,1)"},
		{"globalavgpool,dense", "", {1, 1, 48}, "layer 1 (globalavgpool) needs an image, but "
		 "the data's rows are flat [48]: give their shape with --input-shape H,W,C (e.g. 4,4,3)"},
		{"dense:8,[dense:8,relu],maxpool2d:2,flatten,dense", "", {1, 1, 10},
		 "layer 5 (maxpool2d) needs an image, but the data's rows are flat [10]: give their "
		 "shape with --input-shape H,W,C (H*W*C = 10)"},
		{"dense:8,avgpool2d:2,dense", "", {1, 1, 12}, "layer 2 (avgpool2d) needs an image, but "
		 "the data's rows are flat [12]: give their shape with --input-shape H,W,C (e.g. 2,2,3)"},
		{"conv2d:8:3,relu,flatten,dense", "", {28, 28, 1}, NULL},
		{"conv2d:8:3,relu,flatten,dense", "28,28,1", {1, 1, 784}, NULL},
		{"dense:8,batchnorm,relu,dropout:0.5,flatten,dense", "", {1, 1, 784}, NULL},
		/* an image's tokens need an image; a pool after an embedding is
		 * over tokens */
		{"tokens,attention:2,globalavgpool,dense", "", {1, 1, 48}, "layer 1 (tokens) needs an "
		 "image, but the data's rows are flat [48]: give their shape with --input-shape H,W,C "
		 "(e.g. 4,4,3)"},
		{"embedding:8,attention:2,globalavgpool,dense", "", {1, 1, 48}, NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config cfg;
		struct layer_spec spec[MODEL_MAX_LAYERS];
		int n = 0;
		config_defaults(&cfg);
		snprintf(cfg.model, sizeof(cfg.model), "%s", cases[i].model);
		snprintf(cfg.input_shape, sizeof(cfg.input_shape), "%s", cases[i].input_shape);
		user_error_clear();
		EXPECT(model_specs(&cfg, spec, &n) == 0);
		int rc = model_check_images(&cfg, spec, n, cases[i].data);
		EXPECT(rc == (cases[i].want ? -1 : 0));
		if (cases[i].want)
			EXPECT(contains(user_error_text(), cases[i].want));
		else
			EXPECT(!user_error_pending());
	}
	user_error_clear();
}

int main(void)
{
	const struct backend *be = backend_cpu();
	const int hidden[2] = {256, 256};
	struct model m;
	model_init(&m, be, 784, 10, hidden, 2, ACT_RELU, 1);
	check_registry(&m);
	check_names();
	check_ranks();
	check_signature(be, &m);
	check_glorot(&m);
	check_shards();
	check_resnet();
	check_flat_images();
	model_free(&m);
	return unit_done("test_registry");
}
