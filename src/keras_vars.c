/* keras.h's variables: where each variable of an mtrain model lives in
 * Keras' weights file ("<layer>/vars/<i>", or a sublayer's
 * "<layer>/<sublayer>/vars/<i>", <layer> the group Keras names by the
 * layer's class), for the export (keras_layer_vars) and
 * for --init-from (keras_var_keys), both from keras_var_place: one
 * mapping, both ways. */
#include "keras.h"

#include <stdio.h>
#include <string.h>

/* A sublayer of a Keras layer holding some of its variables in a group of
 * its own: MultiHeadAttention's four EinsumDense projections, each group
 * named by the attribute that holds it ("query_dense"), its vars' "name"
 * attribute the sublayer's own name ("query"), as Keras 3 saves them. */
struct sublayer {
	const char *group, *name;
};

static const struct sublayer attention_parts[] = {
	{"query_dense", "query"},
	{"key_dense", "key"},
	{"value_dense", "value"},
	{"output_dense", "attention_output"},
};

/* Groups one layer may have: its own and attention's four. */
#define GROUPS_PER_LAYER 5

/* Where variable v of layer l (layer.var's order, which is Keras' order)
 * lies in Keras' file: vars/<*index> of the layer's group, or of its
 * sublayer *sub's (NULL: the layer's own). */
static void keras_var_place(const struct layer *l, int v, const struct sublayer **sub,
			    int *index)
{
	*sub = NULL;
	*index = v;
	if (l->spec.kind == LAYER_ATTENTION) {
		/* query, key, value, attention_output: each kernel then bias */
		*sub = &attention_parts[v / 2];
		*index = v % 2;
	}
}

/* Layer i's group in Keras' weights file into out: Keras 3 names a
 * layer's group by its class (snake case, counted in the model's order),
 * not by the layer's name. mtrain's names count each kind the same way,
 * but for a tied embedding: Keras' class is ReversibleEmbedding
 * ("reversible_embedding"), and the embeddings after it count from
 * "embedding" again. */
static void group_name(const struct model *m, int i, const char (*names)[PARAM_NAME_LEN],
		       char *out)
{
	const struct layer *l = &m->layer[i];
	snprintf(out, PARAM_NAME_LEN, "%.80s", names[i]);
	if (l->spec.kind != LAYER_EMBEDDING)
		return;
	int before = 0, lent = 0;
	for (int j = 0; j < i; j++)
		if (m->layer[j].spec.kind == LAYER_EMBEDDING)
			*(m->layer[j].lends ? &lent : &before) += 1;
	if (l->lends)
		snprintf(out, PARAM_NAME_LEN, "reversible_embedding");
	else if (lent && before)
		snprintf(out, PARAM_NAME_LEN, "embedding_%d", before);
	else if (lent)
		snprintf(out, PARAM_NAME_LEN, "embedding");
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
	for (int i = 0; i < m->n_layers; i++) {
		char group[PARAM_NAME_LEN];
		group_name(m, i, names, group);
		for (int v = 0; v < m->layer[i].n_vars && !m->layer[i].borrows; v++) {
			int p = param_at(&m->reg, m->layer[i].var[v]), index;
			const struct sublayer *sub;
			keras_var_place(&m->layer[i], v, &sub, &index);
			if (p >= 0)
				snprintf(keys[p], PARAM_NAME_LEN, "%.60s%s%s/vars/%d", group,
					 sub ? "/" : "", sub ? sub->group : "", index);
		}
	}
}

int keras_group_room(const struct model *m) { return (m->n_layers + 2) * GROUPS_PER_LAYER; }

/* The group of layer `layer` (its own at first) for sub (NULL: the
 * layer's own), made after groups[first..*n) if it is not among them. */
static struct keras_layer_vars *group_of(struct keras_layer_vars *groups, int first, int *n,
					 const struct sublayer *sub, const char *layer,
					 char *name)
{
	if (!sub)
		return &groups[first];
	for (int g = first + 1; g < *n; g++)
		if (groups[g].label == sub->name)
			return &groups[g];
	snprintf(name, PARAM_NAME_LEN, "%.60s/%s", layer, sub->group);
	groups[*n] = (struct keras_layer_vars){.name = name, .label = sub->name};
	return &groups[(*n)++];
}

int keras_layer_vars(const struct model *m, const float *host_w, int whole,
		     struct keras_layer_vars *groups, struct ckpt_var *views,
		     char (*names)[PARAM_NAME_LEN])
{
	char layer[MODEL_MAX_LAYERS][PARAM_NAME_LEN];
	model_layer_names(m, layer);
	snprintf(names[0], PARAM_NAME_LEN, "%s", KERAS_INPUT_NAME);
	groups[0] = (struct keras_layer_vars){.name = names[0]};
	int n = 1, used = 0;
	for (int i = 0; i < m->n_layers; i++) {
		if (m->layer[i].borrows) /* unembed: the embedding's second call, no layer */
			continue;
		int first = n++;
		group_name(m, i, layer, names[first]);
		groups[first] = (struct keras_layer_vars){.name = names[first]};
		for (int v = 0; v < m->layer[i].n_vars; v++) {
			int p = param_at(&m->reg, m->layer[i].var[v]), index;
			if (p < 0)
				continue;
			const struct sublayer *sub;
			keras_var_place(&m->layer[i], v, &sub, &index);
			struct keras_layer_vars *k = group_of(groups, first, &n, sub, layer[i], names[n]);
			const struct param *q = &m->reg.p[p];
			struct ckpt_var *view = &views[used++];
			snprintf(view->name, sizeof(view->name), "%s", q->name);
			view->ndim = q->ndim;
			memcpy(view->shape, q->shape, sizeof(view->shape));
			view->data = (float *)host_w + q->offset;
			k->var[index] = view;
			k->n = index + 1 > k->n ? index + 1 : k->n;
		}
	}
	if (whole && keras_softmax_layer(m)) /* its group, as Keras writes every layer's */
		groups[n++] = (struct keras_layer_vars){.name = keras_softmax_layer(m)};
	return n;
}
