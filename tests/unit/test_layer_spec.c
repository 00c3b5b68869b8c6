/* The model description (--model): every kind with its defaults written
 * out, the --layers shorthand, and bad descriptions named by position. */
#include "layer_spec.h"
#include "log.h"
#include "unit.h"

#include <string.h>

static int parse(const char *desc, struct layer_spec *s, int *n)
{
	user_error_clear();
	return layer_spec_parse(desc, "--model", s, LAYER_SPEC_MAX, n);
}

static void check_round_trip(void)
{
	struct layer_spec s[LAYER_SPEC_MAX];
	char text[512];
	int n;
	EXPECT(parse("conv2d:32:3,batchnorm,relu,maxpool2d:2,conv2d:64:3,batchnorm,relu,"
		     "maxpool2d:2,flatten,dense:128,relu,dropout:0.3,dense", s, &n) == 0);
	EXPECT(n == 13);
	EXPECT_STR(layer_spec_text(s, n, text, sizeof(text)),
		   "conv2d:32:3:1:same,batchnorm,relu,maxpool2d:2:2,conv2d:64:3:1:same,batchnorm,"
		   "relu,maxpool2d:2:2,flatten,dense:128,relu,dropout:0.3,dense");
	EXPECT(s[0].kind == LAYER_CONV2D && s[0].units == 32 && s[0].size == 3 &&
	       s[0].stride == 1 && s[0].same == 1);
	EXPECT(s[12].kind == LAYER_DENSE && s[12].units == 0);
	EXPECT(parse("conv2d:8:5:2:valid,avgpool2d:3:1,globalavgpool,gelu,tanh,dense:10", s,
		     &n) == 0);
	EXPECT(n == 6 && s[0].stride == 2 && s[0].same == 0 && s[1].size == 3 && s[1].stride == 1);
	EXPECT(layer_spec_act(&s[3]) == ACT_GELU && layer_spec_act(&s[4]) == ACT_TANH &&
	       layer_spec_act(&s[0]) == -1);
	/* The text parses back to itself. */
	layer_spec_text(s, n, text, sizeof(text));
	struct layer_spec again[LAYER_SPEC_MAX];
	int m;
	char text2[512];
	EXPECT(parse(text, again, &m) == 0 && m == n);
	EXPECT_STR(layer_spec_text(again, m, text2, sizeof(text2)), text);
}

static void check_mlp(void)
{
	struct layer_spec s[LAYER_SPEC_MAX];
	char text[256];
	const int hidden[2] = {256, 256};
	int n = layer_spec_mlp(hidden, 2, ACT_RELU, s, LAYER_SPEC_MAX);
	EXPECT_STR(layer_spec_text(s, n, text, sizeof(text)), "dense:256,relu,dense:256,relu,dense");
}

/* Every activation of ACT_KINDS is a layer word of its own, with no
 * arguments, that names its act_kind, and --layers' MLP uses it. */
static void check_every_act(void)
{
	for (int a = 0; a < ACT_COUNT; a++) {
		struct layer_spec s[LAYER_SPEC_MAX];
		char desc[64], text[128];
		int n, hidden[1] = {4};
		snprintf(desc, sizeof(desc), "dense:4,%s,dense", act_names[a]);
		EXPECT(parse(desc, s, &n) == 0 && n == 3);
		EXPECT(s[1].kind == LAYER_OF_ACT(a) && layer_spec_act(&s[1]) == a);
		EXPECT_STR(layer_names[s[1].kind], act_names[a]);
		n = layer_spec_mlp(hidden, 1, (enum act_kind)a, s, LAYER_SPEC_MAX);
		EXPECT_STR(layer_spec_text(s, n, text, sizeof(text)), desc);
		snprintf(desc, sizeof(desc), "%s:2", act_names[a]);
		EXPECT(parse(desc, s, &n) == -1);
	}
	EXPECT(layer_names[LAYER_KIND_COUNT] == NULL);
	EXPECT_STR(layer_names[LAYER_OF_ACT(ACT_SILU)], "silu");
}

/* Each bad description: -1 and one line naming the layer, its text, the
 * character where it starts and what was expected. */
static void check_bad(const char *desc, const char *want)
{
	struct layer_spec s[LAYER_SPEC_MAX];
	int n;
	EXPECT(parse(desc, s, &n) == -1);
	if (!strstr(user_error_text(), want) || strchr(user_error_text(), '\n'))
		fprintf(stderr, "for '%s': got '%s', want '%s'\n", desc, user_error_text(), want);
	EXPECT(strstr(user_error_text(), want) != NULL);
	EXPECT(strchr(user_error_text(), '\n') == NULL);
}

/* Blocks: the layers in written order (main path, then shortcut, then the
 * add), each add's inputs, repetition expanded, whitespace and newlines
 * ignored, and the canonical text parsing back to itself. */
static void check_blocks(void)
{
	struct layer_spec s[LAYER_SPEC_MAX], again[LAYER_SPEC_MAX];
	char text[1024], text2[1024];
	int n, m;
	EXPECT(parse("dense:8,[dense:8,relu,dense:8],relu,dense", s, &n) == 0 && n == 7);
	EXPECT(s[4].kind == LAYER_ADD && layer_spec_src(s, 4, 0) == 3 &&
	       layer_spec_src(s, 4, 1) == 0 && s[4].at == 9);
	EXPECT(layer_spec_src(s, 1, 0) == 0 && layer_spec_src(s, 5, 0) == 4);
	EXPECT(layer_spec_src(s, 0, 0) == -1);
	EXPECT_STR(layer_spec_text(s, n, text, sizeof(text)),
		   "dense:8,[dense:8,relu,dense:8],relu,dense");
	/* A projection: main path 1-2, shortcut 3, the add 4 of both. */
	EXPECT(parse("conv2d:4:3, [conv2d:8:3:2,\n\tbatchnorm | conv2d:8:1:2], relu,dense", s,
		     &n) == 0 && n == 7);
	EXPECT(s[3].kind == LAYER_CONV2D && s[3].size == 1 && layer_spec_src(s, 3, 0) == 0);
	EXPECT(layer_spec_src(s, 4, 0) == 2 && layer_spec_src(s, 4, 1) == 3);
	EXPECT_STR(layer_spec_text(s, n, text, sizeof(text)),
		   "conv2d:4:3:1:same,[conv2d:8:3:2:same,batchnorm|conv2d:8:1:2:same],relu,dense");
	/* Repetition, nesting, a block on the model's input. */
	EXPECT(parse("3*([dense:4,tanh],relu),dense", s, &n) == 0 && n == 13);
	EXPECT(layer_spec_src(s, 2, 1) == -1 && layer_spec_src(s, 6, 1) == 3 &&
	       layer_spec_src(s, 10, 1) == 7 && layer_spec_src(s, 12, 0) == 11);
	EXPECT(parse("dense:5,2*[[dense:5,tanh],dense:5|dense:5],dense", s, &n) == 0 && n == 14);
	EXPECT(layer_spec_src(s, 3, 1) == 0 && layer_spec_src(s, 6, 0) == 4 &&
	       layer_spec_src(s, 6, 1) == 5 && layer_spec_src(s, 7, 0) == 6);
	layer_spec_text(s, n, text, sizeof(text));
	EXPECT_STR(text, "dense:5,[[dense:5,tanh],dense:5|dense:5],[[dense:5,tanh],dense:5|dense:5],"
			 "dense");
	EXPECT(parse(text, again, &m) == 0 && m == n);
	EXPECT_STR(layer_spec_text(again, m, text2, sizeof(text2)), text);
	EXPECT(memcmp(again[6].from, s[6].from, sizeof(s[6].from)) == 0);
	/* ResNet-56's 27 blocks and more: LAYER_SPEC_MAX counts the copies. */
	EXPECT(parse("conv2d:16:3,batchnorm,relu,27*([conv2d:16:3,batchnorm,relu,conv2d:16:3,"
		     "batchnorm],relu),globalavgpool,dense", s, &n) == 0 && n == 3 + 27 * 7 + 2);
}

/* An unknown layer word: the nearest kind (as an unknown flag gets the
 * nearest option), and the words there are, an add (a block) not one. */
static void check_unknown(void)
{
	check_bad("conv2:32:3,relu,flatten,dense",
		  "--model: unknown layer 'conv2' at character 1; did you mean 'conv2d'? (layers: "
		  "dense, conv2d, maxpool2d, avgpool2d, globalavgpool, flatten, dropout, batchnorm, "
		  "layernorm, attention, embedding, unembed, posembed, tokens, relu, gelu, tanh, silu, "
		  "gelu_tanh)");
	EXPECT(!strstr(user_error_text(), "add"));
	check_bad("relu,conv:3", "--model: unknown layer 'conv' at character 6; did you mean "
				 "'conv2d'? (layers: dense,");
	check_bad("dense:8, Dense:4,dense", "unknown layer 'Dense' at character 10; did you mean "
					     "'dense'?");
	check_bad("conv2d:8:3,max_pool2d:2,flatten,dense", "unknown layer 'max_pool2d' at "
							   "character 12; did you mean 'maxpool2d'?");
	/* Keras' and PyTorch's names for the same layers. */
	check_bad("Linear:8,relu,dense", "unknown layer 'Linear' at character 1; did you mean 'dense'?");
	check_bad("conv2d:8:3,GlobalAveragePooling2D,dense", "did you mean 'globalavgpool'?");
	/* Far from every kind: the list alone. */
	check_bad("dense,zzzzzz,dense", "--model: unknown layer 'zzzzzz' at character 7 (layers: "
					"dense, conv2d,");
	EXPECT(!strstr(user_error_text(), "did you mean"));
}

int main(void)
{
	check_round_trip();
	check_mlp();
	check_every_act();
	check_bad("conv2d:32", "--model: layer 1 'conv2d:32' (character 1): expected "
			       "conv2d:FILTERS:KERNEL[:STRIDE[:same|valid]]");
	check_unknown();
	check_bad("dense:0", "expected dense[:UNITS]");
	check_bad("dense:x", "expected dense[:UNITS]");
	check_bad("dense:70000", "expected dense[:UNITS]");
	check_bad("conv2d:8:3:1:full", "expected conv2d:FILTERS:KERNEL[:STRIDE[:same|valid]]");
	check_bad("maxpool2d", "layer 1 'maxpool2d' (character 1): expected maxpool2d:SIZE[:STRIDE]");
	check_bad("dropout:1", "expected dropout:RATE with 0 <= RATE < 1");
	check_bad("dropout:-0.1", "expected dropout:RATE with 0 <= RATE < 1");
	check_bad("dropout:nan", "expected dropout:RATE with 0 <= RATE < 1");
	check_bad("relu:2", "layer 1 'relu:2' (character 1): expected relu");
	check_bad("relu,,dense", "layer 2 '' (character 6): expected a layer (an empty one");
	check_bad("dense,", "layer 2 '' (character 7): expected a layer");
	check_bad("", "layer 1 '' (character 1): expected a layer");
	check_bad("flatten:1:2:3:4:5:6:7:8:9", "expected flatten");
	check_blocks();
	check_bad("dense,[dense:4,relu,dense", "--model: the '[' at character 7 is never closed "
					       "(expected ']')");
	check_bad("dense,(relu],dense", "character 12: expected ')' to close the '(' at character 7");
	check_bad("dense,relu],dense", "--model: character 11: ']' with nothing open before it");
	check_bad("dense,0*([dense:4],relu),dense", "character 7: a repetition of 0 (expected 1 to");
	check_bad("2*dense", "character 3: expected '(' or '[' after 2*");
	check_bad("dense,[],dense", "the block at character 7 has no layers on its main path");
	check_bad("dense,[|dense],dense", "the block at character 7 has no layers on its main path");
	check_bad("dense,[relu,],dense", "layer 3 '' (character 13): expected a layer");
	check_bad("dense,[dense:4|],dense", "the block at character 7 has an empty shortcut after "
					    "the '|' at character 15");
	check_bad("dense,add,dense", "layer 2 'add' (character 7): expected a block, [MAIN] or "
				     "[MAIN|SHORTCUT]");
	check_bad("dense,[dense:4,relu,dense]x", "character 27: expected ',' before 'x'");
	check_bad("dense,[dense:4] [dense:4],dense", "character 17: expected ',' before '['");
	check_bad("600*(dense:4),dense", "more than 512 layers");
	return unit_done("test_layer_spec");
}
