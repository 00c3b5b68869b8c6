/* keras.h's model: the config.json of a Keras 3 functional model,
 * written with jansson (keras_vars.c says where its variables lie). Each
 * layer is {"module", "class_name", "config", "name", "inbound_nodes"},
 * its config Keras' arguments (what Keras leaves out takes Keras'
 * default), each inbound node the Keras tensors it is called on, named by
 * the layer (or operation) that made them ("keras_history"). */
#include "keras.h"
#include "check.h"
#include "log.h"
#include "version.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KERAS_MODEL_NAME "mtrain"
#define KERAS_SOFTMAX_NAME "softmax"
/* The Keras release whose native format this is (3.0 onwards reads it). */
#define KERAS_FORMAT_VERSION "3.0.0"

/* How Keras holds a layer's output: [None, D] (a flat input, flatten,
 * global average pooling, a dense on a flat row), [None, T, D] (a
 * sequence of T tokens) or [None, H, W, C]. */
enum keras_rank { RANK_FLAT, RANK_SEQ, RANK_IMAGE };

/* out (an mtrain shape: {H, W, C}, a sequence {1, T, D}) as Keras holds
 * it at rank r, the batch's None first. */
static json_t *tensor_shape(const int out[3], enum keras_rank r)
{
	json_t *s = json_array();
	json_array_append_new(s, json_null());
	if (r == RANK_FLAT)
		json_array_append_new(s, json_integer((json_int_t)out[0] * out[1] * out[2]));
	for (int d = r == RANK_SEQ ? 1 : 0; r != RANK_FLAT && d < 3; d++)
		json_array_append_new(s, json_integer(out[d]));
	return s;
}

/* The Keras tensor the layer or operation `from` made when called for
 * the node-th time (0: the first; a tied embedding's reverse call is its
 * second), its shape out. */
static json_t *keras_tensor(const char *from, int node, const int out[3], enum keras_rank r)
{
	return json_pack("{s:s, s:{s:o, s:s, s:[s, i, i]}}", "class_name", "__keras_tensor__",
			 "config", "shape", tensor_shape(out, r), "dtype", "float32",
			 "keras_history", from, node, 0);
}

static json_t *pair(int a) { return json_pack("[i, i]", a, a); }

/* A float argument as it was written (1e-05, not 9.99999975e-06). */
static json_t *real_of(float f)
{
	char text[32];
	return json_real(strtod(config_float_text(f, text, sizeof(text)), NULL));
}

/* Whether Keras reads layer l's input as an image, [None, H, W, C]: the
 * 2-D layers, tokens (Reshape), and a layernorm on an image's pixels (it
 * normalises each pixel's channels; on a flat row Keras' would normalise
 * the whole row). */
static int reads_image(const struct layer *l)
{
	switch (l->spec.kind) {
	case LAYER_CONV2D:
	case LAYER_MAXPOOL2D:
	case LAYER_AVGPOOL2D:
	case LAYER_GLOBALAVGPOOL:
	case LAYER_TOKENS:
		return !l->in_seq;
	case LAYER_LAYERNORM:
		return !l->in_seq && l->in[0] * l->in[1] > 1;
	default:
		return 0;
	}
}

/* How one mtrain layer is called in Keras: what layer_args fills beside
 * the config. */
struct keras_call {
	const char *cls;        /* e.g. "Dense" */
	const char *module;     /* "keras.layers" unless set */
	const char *registered; /* registered_name (a package's own class,
				 * keras_hub's "keras_hub>PositionEmbedding",
				 * an operation's), or NULL */
	int op;                 /* a keras.ops operation, not a layer: its config
				 * holds its name and arguments only */
	int twice;              /* called on (x, x): attention's query and value */
	int adds_input;         /* its output is added to its input by an Add
				 * after it (posembed: x + PositionEmbedding(x)) */
	json_t *kwargs;         /* the call's keyword arguments, or NULL */
	json_t *build;          /* its build_config, or NULL */
	enum keras_rank rank;   /* its output's */
};

/* Layer i's Keras class and its arguments beyond name, trainable and
 * dtype, into call and cfg, from the rank of its input (in). NULL, or why
 * Keras cannot express it as mtrain computes it. */
static const char *layer_args(const struct model *m, int i, enum keras_rank in,
			      struct keras_call *call, json_t *cfg)
{
	const struct layer *l = &m->layer[i];
	const struct layer_spec *s = &l->spec;
	static char why[160];
	call->rank = in;
	switch (s->kind) {
	case LAYER_DENSE:
		/* on a sequence, at each token: Keras' Dense on [T, D] */
		call->cls = "Dense";
		if (in == RANK_IMAGE) {
			snprintf(why, sizeof(why), "takes a %dx%dx%d image, where Keras' Dense would "
				 "apply at each position: put flatten or globalavgpool before it",
				 l->in[0], l->in[1], l->in[2]);
			return why;
		}
		json_object_set_new(cfg, "units", json_integer(in == RANK_SEQ ? l->out[2]
									  : (json_int_t)l->out_size));
		/* The model's output: probabilities, as a Keras classifier gives
		 * (keras_model_config adds a softmax after any other last layer). */
		json_object_set_new(cfg, "activation",
				    json_string(i == m->n_layers - 1 ? "softmax" : "linear"));
		json_object_set_new(cfg, "use_bias", json_true());
		return NULL;
	case LAYER_CONV2D:
	case LAYER_MAXPOOL2D:
	case LAYER_AVGPOOL2D:
	case LAYER_GLOBALAVGPOOL:
		if (s->kind == LAYER_GLOBALAVGPOOL && in == RANK_SEQ) {
			/* the mean over the tokens */
			call->cls = "GlobalAveragePooling1D";
			call->rank = RANK_FLAT;
			json_object_set_new(cfg, "data_format", json_string("channels_last"));
			json_object_set_new(cfg, "keepdims", json_false());
			return NULL;
		}
		if (in != RANK_IMAGE)
			return in == RANK_FLAT ? "takes a flattened input, which Keras' 2-D layers do not"
					       : "takes a sequence, which Keras' 2-D layers do not";
		call->rank = s->kind == LAYER_GLOBALAVGPOOL ? RANK_FLAT : RANK_IMAGE;
		json_object_set_new(cfg, "data_format", json_string("channels_last"));
		if (s->kind == LAYER_GLOBALAVGPOOL) {
			call->cls = "GlobalAveragePooling2D";
			json_object_set_new(cfg, "keepdims", json_false());
			return NULL;
		}
		json_object_set_new(cfg, "strides", pair(l->win.sh));
		if (s->kind != LAYER_CONV2D) {
			call->cls = s->kind == LAYER_MAXPOOL2D ? "MaxPooling2D" : "AveragePooling2D";
			json_object_set_new(cfg, "pool_size", pair(l->win.kh));
			json_object_set_new(cfg, "padding", json_string("valid"));
			return NULL;
		}
		call->cls = "Conv2D";
		json_object_set_new(cfg, "filters", json_integer(s->units));
		json_object_set_new(cfg, "kernel_size", pair(l->win.kh));
		json_object_set_new(cfg, "padding", json_string(s->same ? "same" : "valid"));
		json_object_set_new(cfg, "dilation_rate", pair(1));
		json_object_set_new(cfg, "groups", json_integer(1));
		json_object_set_new(cfg, "activation", json_string("linear"));
		json_object_set_new(cfg, "use_bias", json_true());
		return NULL;
	case LAYER_FLATTEN:
		call->cls = "Flatten";
		call->rank = RANK_FLAT;
		json_object_set_new(cfg, "data_format", json_string("channels_last"));
		return NULL;
	case LAYER_DROPOUT:
		call->cls = "Dropout";
		json_object_set_new(cfg, "rate", json_real(s->rate));
		return NULL;
	case LAYER_BATCHNORM:
		/* layer_bn.c's momentum and epsilon are Keras' defaults */
		call->cls = "BatchNormalization";
		json_object_set_new(cfg, "axis", json_integer(-1));
		json_object_set_new(cfg, "momentum", json_real(0.99));
		json_object_set_new(cfg, "epsilon", json_real(0.001));
		json_object_set_new(cfg, "center", json_true());
		json_object_set_new(cfg, "scale", json_true());
		return NULL;
	case LAYER_ADD:
		call->cls = "Add";
		return NULL;
	case LAYER_LAYERNORM:
		/* each position's last axis, at any rank */
		call->cls = "LayerNormalization";
		json_object_set_new(cfg, "axis", json_integer(-1));
		json_object_set_new(cfg, "epsilon", real_of(s->eps));
		json_object_set_new(cfg, "center", json_true());
		json_object_set_new(cfg, "scale", json_true());
		json_object_set_new(cfg, "rms_scaling", json_false());
		return NULL;
	case LAYER_ATTENTION: {
		/* self-attention: query and value the same tensor (the key is
		 * the value's), key_dim = value_dim = D / heads, the output back
		 * to the query's D; the causal mask is the call's */
		int K = l->in[2] / s->units;
		json_t *shape = tensor_shape(l->in, RANK_SEQ);
		call->cls = "MultiHeadAttention";
		call->twice = 1;
		json_object_set_new(cfg, "num_heads", json_integer(s->units));
		json_object_set_new(cfg, "key_dim", json_integer(K));
		json_object_set_new(cfg, "value_dim", json_integer(K));
		json_object_set_new(cfg, "dropout", real_of(s->rate));
		json_object_set_new(cfg, "use_bias", json_true());
		json_object_set_new(cfg, "output_shape", json_null());
		json_object_set_new(cfg, "attention_axes", json_null());
		call->kwargs = s->causal ? json_pack("{s:b}", "use_causal_mask", 1) : NULL;
		call->build = json_pack("{s:{s:O, s:o}}", "shapes_dict", "query_shape", shape,
					"value_shape", shape);
		return NULL;
	}
	case LAYER_POSEMBED:
		/* keras_hub's layer gives the embeddings alone: x + it */
		call->cls = "PositionEmbedding";
		call->module = "keras_hub.src.layers.modeling.position_embedding";
		call->registered = "keras_hub>PositionEmbedding";
		call->adds_input = 1;
		json_object_set_new(cfg, "sequence_length", json_integer(l->in[1]));
		return NULL;
	case LAYER_TOKENS:
		call->cls = "Reshape";
		call->rank = RANK_SEQ;
		json_object_set_new(cfg, "target_shape", json_pack("[i, i]", l->out[1], l->out[2]));
		return NULL;
	case LAYER_EMBEDDING:
		/* a flat row of token ids (Keras casts them to integers); when
		 * an unembed takes its table too, keras_hub's
		 * ReversibleEmbedding with tied weights, which keras_model_config
		 * calls again with reverse=True for the unembed: one variable,
		 * "embeddings", as Keras' Embedding holds it */
		call->cls = "Embedding";
		call->rank = RANK_SEQ;
		json_object_set_new(cfg, "input_dim", json_integer(l->vocab));
		json_object_set_new(cfg, "output_dim", json_integer(s->units));
		if (l->lends) {
			call->cls = "ReversibleEmbedding";
			call->module = "keras_hub.src.layers.modeling.reversible_embedding";
			call->registered = "keras_hub>ReversibleEmbedding";
			json_object_set_new(cfg, "tie_weights", json_true());
			json_object_set_new(cfg, "reverse_dtype", json_null());
			json_object_set_new(cfg, "logit_soft_cap", json_null());
		}
		return NULL;
	case LAYER_UNEMBED:
		/* not a layer of its own: keras_model_config calls the lending
		 * embedding again */
		call->rank = RANK_SEQ;
		return NULL;
	case LAYER_ACT:
	case LAYER_KIND_COUNT:
		break;
	}
	/* The activations: gelu is the exact (erf) one, Keras' default; its
	 * tanh form is the operation keras.ops.gelu(x, approximate=True), as
	 * Keras writes it in a functional model (Activation names no word
	 * for it). */
	if (s->kind == LAYER_OF_ACT(ACT_GELU_TANH)) {
		call->cls = "Gelu";
		call->module = "keras.src.ops.nn";
		call->registered = "Gelu";
		call->op = 1;
		json_object_set_new(cfg, "approximate", json_true());
		return NULL;
	}
	call->cls = "Activation";
	json_object_set_new(cfg, "activation", json_string(layer_names[s->kind]));
	return NULL;
}

/* {"module", "class_name", "config", "registered_name", "name",
 * "build_config", "inbound_nodes"} of one layer (or operation) called on
 * args (an array) with kwargs (NULL: none). */
static json_t *layer_entry(const struct keras_call *c, const char *name, json_t *cfg,
			   json_t *args, json_t *kwargs)
{
	json_object_set_new(cfg, "name", json_string(name));
	if (!c->op) {
		json_object_set_new(cfg, "trainable", json_true());
		json_object_set_new(cfg, "dtype", json_string("float32"));
	}
	json_t *e = json_pack("{s:s, s:s, s:o, s:o, s:s}", "module",
			      c->module ? c->module : "keras.layers", "class_name", c->cls,
			      "config", cfg, "registered_name",
			      c->registered ? json_string(c->registered) : json_null(), "name", name);
	if (c->build)
		json_object_set_new(e, "build_config", c->build);
	json_object_set_new(e, "inbound_nodes",
			    json_pack("[{s:o, s:o}]", "args", args, "kwargs",
				      kwargs ? kwargs : json_object()));
	return e;
}

char *keras_model_config(const struct model *m)
{
	char names[MODEL_MAX_LAYERS][PARAM_NAME_LEN], out_name[MODEL_MAX_LAYERS][PARAM_NAME_LEN];
	enum keras_rank rank[MODEL_MAX_LAYERS];
	model_layer_names(m, names);
	/* A flat input ([None, D]) where no layer reads an image: an MLP
	 * reads each row as H * W * C values, as mtrain's dense does. */
	enum keras_rank input = RANK_FLAT;
	for (int i = 0; i < m->n_layers; i++)
		if (reads_image(&m->layer[i]))
			input = RANK_IMAGE;
	json_t *layers = json_array();
	json_t *entry[MODEL_MAX_LAYERS] = {0}; /* each layer's, borrowed from layers */
	int node[MODEL_MAX_LAYERS] = {0};      /* which call of out_name[i] made its output */
	int lender = -1;                       /* the embedding an unembed calls again */
	json_array_append_new(layers,
			      json_pack("{s:s, s:s, s:{s:o, s:s, s:s}, s:n, s:s, s:[]}", "module",
					"keras.layers", "class_name", "InputLayer", "config",
					"batch_shape", tensor_shape(m->in, input), "dtype",
					"float32", "name", KERAS_INPUT_NAME, "registered_name",
					"name", KERAS_INPUT_NAME, "inbound_nodes"));
	const char *why = NULL;
	int i;
	for (i = 0; i < m->n_layers && !why; i++) {
		const struct layer *l = &m->layer[i];
		json_t *args = json_array(), *cfg = json_object();
		/* Its inputs: the tensors the layers (or the Add after a
		 * posembed) before it made. */
		for (int k = 0; k < l->n_src; k++) {
			int src = l->src[k];
			json_array_append_new(args,
					      src < 0 ? keras_tensor(KERAS_INPUT_NAME, 0, m->in, input)
						      : keras_tensor(out_name[src], node[src],
								     m->layer[src].out, rank[src]));
		}
		enum keras_rank in = l->src[0] < 0 ? input : rank[l->src[0]];
		struct keras_call call = {0};
		why = layer_args(m, i, in, &call, cfg);
		if (why) {
			json_decref(args);
			json_decref(cfg);
			break;
		}
		rank[i] = call.rank;
		if (l->spec.kind == LAYER_EMBEDDING && l->lends && lender < 0)
			lender = i;
		if (l->spec.kind == LAYER_UNEMBED) {
			/* the tied embedding's second call: its inbound nodes in
			 * order, so its output is node 1's */
			json_t *nodes = json_object_get(entry[lender], "inbound_nodes");
			json_array_append_new(nodes, json_pack("{s:o, s:{s:b}}", "args", args, "kwargs",
							       "reverse", 1));
			snprintf(out_name[i], PARAM_NAME_LEN, "%s", names[lender]);
			node[i] = (int)json_array_size(nodes) - 1;
			json_decref(cfg);
			continue;
		}
		snprintf(out_name[i], PARAM_NAME_LEN, "%s", names[i]);
		/* An add is called on the list of its inputs, attention on its
		 * input twice, the others on one. */
		if (call.twice)
			json_array_append(args, json_array_get(args, 0));
		json_t *x = json_incref(json_array_get(args, 0));
		entry[i] = layer_entry(&call, names[i], cfg, l->n_src > 1 ? json_pack("[o]", args) : args,
				       call.kwargs);
		json_array_append_new(layers, entry[i]);
		if (call.adds_input) { /* x + layer(x): an Add named after the layer */
			struct keras_call add = {.cls = "Add"};
			snprintf(out_name[i], PARAM_NAME_LEN, "%.80s_add", names[i]);
			json_array_append_new(
				layers, layer_entry(&add, out_name[i], json_object(),
						    json_pack("[[o, o]]", x,
							      keras_tensor(names[i], 0, l->out, rank[i])),
						    NULL));
		} else {
			json_decref(x);
		}
	}
	if (why) {
		json_decref(layers);
		char text[64];
		layer_spec_text(&m->layer[i].spec, 1, text, sizeof(text));
		user_error("export --format keras: layer %d (%s, %s) %s", i + 1, names[i], text, why);
		return NULL;
	}
	/* Probabilities out: a last Dense applies the softmax itself; after
	 * any other last layer, an Activation named "softmax" (a name mtrain's
	 * kind counters never give) does. */
	int last = m->n_layers - 1;
	const char *out = out_name[last];
	if (keras_softmax_layer(m)) {
		json_t *softmax = json_object();
		struct keras_call act = {.cls = "Activation"};
		json_object_set_new(softmax, "activation", json_string("softmax"));
		json_array_append_new(layers, layer_entry(&act, KERAS_SOFTMAX_NAME, softmax,
							  json_pack("[o]", keras_tensor(out, node[last],
											m->layer[last].out,
											rank[last])),
							  NULL));
		out = KERAS_SOFTMAX_NAME;
	}
	json_t *root = json_pack(
		"{s:s, s:s, s:{s:s, s:b, s:o, s:[s, i, i], s:[s, i, i]}, s:s, s:{s:n}, s:n}",
		"module", "keras.src.models.functional", "class_name", "Functional", "config",
		"name", KERAS_MODEL_NAME, "trainable", 1, "layers", layers, "input_layers",
		KERAS_INPUT_NAME, 0, 0, "output_layers", out, 0, 0, "registered_name",
		"Functional", "build_config", "input_shape", "compile_config");
	ALLOC_CHECK(root);
	char *text = json_dumps(root, JSON_INDENT(1));
	json_decref(root);
	ALLOC_CHECK(text);
	return text;
}

const char *keras_softmax_layer(const struct model *m)
{
	return m->layer[m->n_layers - 1].spec.kind == LAYER_DENSE ? NULL : KERAS_SOFTMAX_NAME;
}

char *keras_metadata(void)
{
	char date[32];
	time_t now = time(NULL);
	strftime(date, sizeof(date), "%Y-%m-%d@%H:%M:%S", gmtime(&now));
	json_t *meta = json_pack("{s:s, s:s, s:s}", "keras_version", KERAS_FORMAT_VERSION,
				 "date_saved", date, "producer", "mtrain " MTRAIN_VERSION);
	char *text = json_dumps(meta, 0);
	json_decref(meta);
	ALLOC_CHECK(text);
	return text;
}
