/* model_summary and model_text of model.h: the model as Keras'
 * model.summary() shows one, as a tree (a block's layers indented under
 * it), and as the start line's text. */
#include "log.h"
#include "model.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* n with thousands separated: "274,538". */
static const char *grouped(size_t n, char *buf, size_t len)
{
	char digits[32];
	int d = snprintf(digits, sizeof(digits), "%zu", n), used = 0;
	for (int i = 0; i < d && (size_t)used + 2 < len; i++) {
		if (i && (d - i) % 3 == 0)
			buf[used++] = ',';
		buf[used++] = digits[i];
	}
	buf[used] = 0;
	return buf;
}

/* Values of layer l's variables: every variable whose place is one of its. */
static size_t layer_params(const struct model *m, const struct layer *l, int trainable_only)
{
	size_t n = 0;
	for (int v = 0; v < l->n_vars && !l->borrows; v++)
		for (int p = 0; p < m->reg.n; p++)
			if (m->reg.p[p].offset == l->var[v] && (m->reg.p[p].trainable || !trainable_only))
				n += m->reg.p[p].size;
	return n;
}

void model_summary(const struct model *m, FILE *f)
{
	int n = m->n_layers, depth[MODEL_MAX_LAYERS] = {0};
	char names[MODEL_MAX_LAYERS][PARAM_NAME_LEN];
	model_layer_names(m, names);
	for (int i = 0; i < n; i++) {
		const struct layer *l = &m->layer[i];
		/* An add closes its block: its main path's and shortcut's layers. */
		if (l->spec.kind == LAYER_ADD)
			for (int j = i - l->spec.units - l->spec.size; j < i; j++)
				depth[j]++;
	}
	fprintf(f, "%-44s %-24s %-12s %10s  %s\n", "layer", "as written", "output", "params",
		"takes");
	size_t all = 0, trainable = 0;
	for (int i = 0; i < n; i++) {
		const struct layer *l = &m->layer[i];
		char label[96], text[64], shape[32], count[32], takes[128] = "";
		snprintf(label, sizeof(label), "%*s%s", 2 * depth[i], "", names[i]);
		if (l->spec.kind == LAYER_ADD)
			snprintf(text, sizeof(text), "add");
		else
			layer_spec_text(&l->spec, 1, text, sizeof(text));
		if (l->seq) /* T tokens of D: Keras' (None, T, D) */
			snprintf(shape, sizeof(shape), "%dx%d", l->out[1], l->out[2]);
		else
			snprintf(shape, sizeof(shape), "%dx%dx%d", l->out[0], l->out[1], l->out[2]);
		size_t p = layer_params(m, l, 0);
		all += p;
		trainable += layer_params(m, l, 1);
		/* Where it takes its input from, unless that is the layer above. */
		for (int k = 0; k < l->n_src; k++)
			if (l->n_src > 1 || l->src[k] != i - 1) {
				size_t used = strlen(takes);
				snprintf(takes + used, sizeof(takes) - used, "%s%s", used ? ", " : "",
					 l->src[k] < 0 ? "input" : names[l->src[k]]);
			}
		fprintf(f, "%-44s %-24s %-12s %10s%s%s\n", label, text, shape,
			grouped(p, count, sizeof(count)), *takes ? "  " : "", takes);
	}
	char a[32], t[32], u[32];
	fprintf(f, "%d layers on input %dx%dx%d, %d classes; %s parameters: %s trainable, %s "
		   "not (batch norm's moving statistics)\n",
		n, m->in[0], m->in[1], m->in[2], m->classes, grouped(all, a, sizeof(a)),
		grouped(trainable, t, sizeof(t)), grouped(all - trainable, u, sizeof(u)));
	char planned[32], apart[32], eval[32], kept[32] = "";
	if (m->keep_per_row) /* attention's scores among them */
		bytes_text(4.0 * (double)m->keep_per_row, kept, sizeof(kept));
	fprintf(f, "activations %s a row training (outputs, gradients%s%s%s, planned; %s each "
		   "apart), %s evaluating\n",
		bytes_text(4.0 * (double)m->arena_per_row, planned, sizeof(planned)),
		*kept ? " and what layers keep for their backward, " : "", kept,
		*kept ? " of it before sharing" : "",
		bytes_text(4.0 * (double)m->unplanned_per_row, apart, sizeof(apart)),
		bytes_text(4.0 * (double)m->eval_per_row, eval, sizeof(eval)));
}

void model_text(const struct model *m, const struct config *cfg, char *buf, size_t len)
{
	if (strchr(cfg->model, '[')) { /* blocks: as written, without blanks */
		size_t used = 0;
		for (const char *p = cfg->model; *p && used + 1 < len; p++)
			if (!isspace((unsigned char)*p))
				buf[used++] = *p;
		buf[used] = 0;
		return;
	}
	if (cfg->model[0]) {
		struct layer_spec spec[MODEL_MAX_LAYERS];
		for (int i = 0; i < m->n_layers; i++)
			spec[i] = m->layer[i].spec;
		layer_spec_text(spec, m->n_layers, buf, len);
		return;
	}
	size_t used = (size_t)snprintf(buf, len, "%d", m->in_dim);
	for (int i = 0; i < cfg->n_hidden && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "-%d", cfg->hidden[i]);
	if (used < len)
		snprintf(buf + used, len - used, "-%d %s", m->classes, act_names[cfg->act]);
}
