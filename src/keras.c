/* keras.h: the config.json of a Keras 3 functional model, written with
 * jansson. Each layer is {"module", "class_name", "config", "name",
 * "inbound_nodes"}, its config Keras' arguments (what Keras leaves out
 * takes Keras' default), each inbound node the Keras tensors it is called
 * on, named by the layer that made them ("keras_history"). */
#include "keras.h"
#include "check.h"
#include "log.h"
#include "version.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define KERAS_INPUT_NAME "input_layer"
#define KERAS_MODEL_NAME "mtrain"
#define KERAS_SOFTMAX_NAME "softmax"
/* The Keras release whose native format this is (3.0 onwards reads it). */
#define KERAS_FORMAT_VERSION "3.0.0"

/* A layer's output as Keras holds it: [None, H, W, C], or [None, D] once
 * flattened (a flat input, flatten, global average pooling, dense). */
static json_t *tensor_shape(const int out[3], int flat)
{
	json_t *s = json_array();
	json_array_append_new(s, json_null());
	if (flat) {
		json_array_append_new(s, json_integer((json_int_t)out[0] * out[1] * out[2]));
	} else {
		for (int d = 0; d < 3; d++)
			json_array_append_new(s, json_integer(out[d]));
	}
	return s;
}

/* The Keras tensor layer `from` made (its shape out, flat or not). */
static json_t *keras_tensor(const char *from, const int out[3], int flat)
{
	return json_pack("{s:s, s:{s:o, s:s, s:[s, i, i]}}", "class_name", "__keras_tensor__",
			 "config", "shape", tensor_shape(out, flat), "dtype", "float32",
			 "keras_history", from, 0, 0);
}

static json_t *pair(int a) { return json_pack("[i, i]", a, a); }

/* Layer i's Keras class and its arguments beyond name, trainable and
 * dtype, into *cls and cfg; the rank its output has in Keras into
 * *flat_out from its input's (flat_in). NULL, or why Keras cannot express
 * it as mtrain computes it. */
static const char *layer_args(const struct model *m, int i, int flat_in, const char **cls,
			      json_t *cfg, int *flat_out)
{
	const struct layer *l = &m->layer[i];
	const struct layer_spec *s = &l->spec;
	static char why[160];
	*flat_out = flat_in;
	switch (s->kind) {
	case LAYER_DENSE:
		*cls = "Dense";
		if (!flat_in) {
			snprintf(why, sizeof(why), "takes a %dx%dx%d image, where Keras' Dense would "
				 "apply at each position: put flatten or globalavgpool before it",
				 l->in[0], l->in[1], l->in[2]);
			return why;
		}
		json_object_set_new(cfg, "units", json_integer((json_int_t)l->out_size));
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
		if (flat_in)
			return "takes a flattened input, which Keras' 2-D layers do not";
		*flat_out = s->kind == LAYER_GLOBALAVGPOOL;
		json_object_set_new(cfg, "data_format", json_string("channels_last"));
		if (s->kind == LAYER_GLOBALAVGPOOL) {
			*cls = "GlobalAveragePooling2D";
			json_object_set_new(cfg, "keepdims", json_false());
			return NULL;
		}
		json_object_set_new(cfg, "strides", pair(l->win.sh));
		if (s->kind != LAYER_CONV2D) {
			*cls = s->kind == LAYER_MAXPOOL2D ? "MaxPooling2D" : "AveragePooling2D";
			json_object_set_new(cfg, "pool_size", pair(l->win.kh));
			json_object_set_new(cfg, "padding", json_string("valid"));
			return NULL;
		}
		*cls = "Conv2D";
		json_object_set_new(cfg, "filters", json_integer(s->units));
		json_object_set_new(cfg, "kernel_size", pair(l->win.kh));
		json_object_set_new(cfg, "padding", json_string(s->same ? "same" : "valid"));
		json_object_set_new(cfg, "dilation_rate", pair(1));
		json_object_set_new(cfg, "groups", json_integer(1));
		json_object_set_new(cfg, "activation", json_string("linear"));
		json_object_set_new(cfg, "use_bias", json_true());
		return NULL;
	case LAYER_FLATTEN:
		*cls = "Flatten";
		*flat_out = 1;
		json_object_set_new(cfg, "data_format", json_string("channels_last"));
		return NULL;
	case LAYER_DROPOUT:
		*cls = "Dropout";
		json_object_set_new(cfg, "rate", json_real(s->rate));
		return NULL;
	case LAYER_BATCHNORM:
		/* layer_bn.c's momentum and epsilon are Keras' defaults */
		*cls = "BatchNormalization";
		json_object_set_new(cfg, "axis", json_integer(-1));
		json_object_set_new(cfg, "momentum", json_real(0.99));
		json_object_set_new(cfg, "epsilon", json_real(0.001));
		json_object_set_new(cfg, "center", json_true());
		json_object_set_new(cfg, "scale", json_true());
		return NULL;
	case LAYER_ADD:
		*cls = "Add";
		return NULL;
	case LAYER_ACT:
	case LAYER_KIND_COUNT:
		break;
	}
	/* The activations: gelu is the exact (erf) one, Keras' default. */
	*cls = "Activation";
	json_object_set_new(cfg, "activation", json_string(layer_names[s->kind]));
	return NULL;
}

/* {"module", "class_name", "config", "registered_name", "name",
 * "inbound_nodes"} of one layer. */
static json_t *layer_entry(const char *cls, const char *name, json_t *cfg, json_t *inbound)
{
	json_object_set_new(cfg, "name", json_string(name));
	json_object_set_new(cfg, "trainable", json_true());
	json_object_set_new(cfg, "dtype", json_string("float32"));
	return json_pack("{s:s, s:s, s:o, s:n, s:s, s:o}", "module", "keras.layers", "class_name",
			 cls, "config", cfg, "registered_name", "name", name, "inbound_nodes",
			 inbound);
}

char *keras_model_config(const struct model *m)
{
	char names[MODEL_MAX_LAYERS][PARAM_NAME_LEN];
	int flat[MODEL_MAX_LAYERS];
	model_layer_names(m, names);
	/* A flat input ([None, D]) where no layer needs an image: an MLP
	 * reads each row as H * W * C values, as mtrain's dense does. */
	int input_flat = 1;
	for (int i = 0; i < m->n_layers; i++) {
		enum layer_kind k = m->layer[i].spec.kind;
		if (k == LAYER_CONV2D || k == LAYER_MAXPOOL2D || k == LAYER_AVGPOOL2D ||
		    k == LAYER_GLOBALAVGPOOL)
			input_flat = 0;
	}
	json_t *layers = json_array();
	json_array_append_new(layers,
			      json_pack("{s:s, s:s, s:{s:o, s:s, s:s}, s:n, s:s, s:[]}", "module",
					"keras.layers", "class_name", "InputLayer", "config",
					"batch_shape", tensor_shape(m->in, input_flat), "dtype",
					"float32", "name", KERAS_INPUT_NAME, "registered_name",
					"name", KERAS_INPUT_NAME, "inbound_nodes"));
	const char *why = NULL;
	int i;
	for (i = 0; i < m->n_layers && !why; i++) {
		const struct layer *l = &m->layer[i];
		json_t *args = json_array(), *cfg = json_object();
		for (int k = 0; k < l->n_src; k++) {
			int src = l->src[k];
			json_array_append_new(args, src < 0 ? keras_tensor(KERAS_INPUT_NAME, m->in,
									     input_flat)
							    : keras_tensor(names[src], m->layer[src].out,
									   flat[src]));
		}
		int flat_in = l->src[0] < 0 ? input_flat : flat[l->src[0]];
		const char *cls = NULL;
		why = layer_args(m, i, flat_in, &cls, cfg, &flat[i]);
		if (why) {
			json_decref(args);
			json_decref(cfg);
			break;
		}
		/* An add is called on the list of its inputs, the others on one. */
		json_t *call = l->n_src > 1 ? json_pack("[o]", args) : args;
		json_array_append_new(layers, layer_entry(cls, names[i], cfg,
							  json_pack("[{s:o, s:{}}]", "args", call,
								    "kwargs")));
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
	const char *out = names[m->n_layers - 1];
	const struct layer *last = &m->layer[m->n_layers - 1];
	if (keras_softmax_layer(m)) {
		json_t *softmax = json_object();
		json_object_set_new(softmax, "activation", json_string("softmax"));
		json_t *in = json_pack("[{s:[o], s:{}}]", "args",
				       keras_tensor(out, last->out, flat[m->n_layers - 1]), "kwargs");
		json_array_append_new(layers, layer_entry("Activation", KERAS_SOFTMAX_NAME, softmax, in));
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

/* The registry entry at offset, or -1. */
static int param_at(const struct params *reg, size_t offset)
{
	for (int p = 0; p < reg->n; p++)
		if (reg->p[p].offset == offset)
			return p;
	return -1;
}

void keras_var_keys(const struct model *m, char (*keys)[PARAM_NAME_LEN])
{
	char names[MODEL_MAX_LAYERS][PARAM_NAME_LEN];
	model_layer_names(m, names);
	for (int p = 0; p < m->reg.n; p++)
		snprintf(keys[p], PARAM_NAME_LEN, "%s", m->reg.p[p].name);
	for (int i = 0; i < m->n_layers; i++)
		for (int v = 0; v < m->layer[i].n_vars; v++) {
			int p = param_at(&m->reg, m->layer[i].var[v]);
			if (p >= 0)
				snprintf(keys[p], PARAM_NAME_LEN, "%.80s/vars/%c", names[i], '0' + v);
		}
}

int keras_layer_vars(const struct model *m, const float *host_w, int whole,
		     struct keras_layer_vars *layers, struct ckpt_var *views,
		     char (*names)[PARAM_NAME_LEN])
{
	snprintf(names[0], PARAM_NAME_LEN, "%s", KERAS_INPUT_NAME);
	model_layer_names(m, names + 1);
	layers[0] = (struct keras_layer_vars){.name = names[0]};
	int used = 0;
	for (int i = 0; i < m->n_layers; i++) {
		struct keras_layer_vars *k = &layers[i + 1];
		*k = (struct keras_layer_vars){.name = names[i + 1]};
		for (int v = 0; v < m->layer[i].n_vars; v++) {
			int p = param_at(&m->reg, m->layer[i].var[v]);
			if (p < 0)
				continue;
			const struct param *q = &m->reg.p[p];
			struct ckpt_var *view = &views[used++];
			snprintf(view->name, sizeof(view->name), "%s", q->name);
			view->ndim = q->ndim;
			memcpy(view->shape, q->shape, sizeof(view->shape));
			view->data = (float *)host_w + q->offset;
			k->var[k->n++] = view;
		}
	}
	int n = m->n_layers + 1;
	if (whole && keras_softmax_layer(m)) /* its group, as Keras writes every layer's */
		layers[n++] = (struct keras_layer_vars){.name = keras_softmax_layer(m)};
	return n;
}
