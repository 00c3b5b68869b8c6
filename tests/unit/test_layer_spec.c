/* The model description (--model): every kind with its defaults written
 * out, the --layers shorthand, and bad descriptions named by position. */
#include "layer_spec.h"
#include "log.h"
#include "unit.h"

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

int main(void)
{
	check_round_trip();
	check_mlp();
	check_every_act();
	check_bad("conv2d:32", "--model: layer 1 'conv2d:32' (character 1): expected "
			       "conv2d:FILTERS:KERNEL[:STRIDE[:same|valid]]");
	check_bad("relu,conv:3", "layer 2 'conv:3' (character 6): expected a layer kind");
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
	return unit_done("test_layer_spec");
}
