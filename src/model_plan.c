/* The backward walk and activation memory of a model whose layers are
 * planned (model_plan, model.c calls these in this order). */
#include "check.h"
#include "log.h"
#include "model.h"
#include "model_plan.h"

#include <stdlib.h>

int model_plan_tied(struct model *m, int n)
{
	int table = -1; /* the embedding an unembed takes its table from */
	for (int i = 0; i < n; i++) {
		struct layer *l = &m->layer[i];
		if (l->spec.kind == LAYER_EMBEDDING && table < 0)
			table = i;
		if (l->spec.kind != LAYER_UNEMBED)
			continue;
		if (table < 0)
			return user_error("--model: layer %d (unembed): gives logits against an embedding's "
					  "table, but no embedding comes before it", i + 1);
		struct layer *e = &m->layer[table];
		if (e->out[2] != l->in[2])
			return user_error("--model: layer %d (unembed): takes tokens of width %d, but the "
					  "embedding (layer %d) it shares is %d wide (the last layer "
					  "before it must give %d)", i + 1, l->in[2], table + 1,
					  e->out[2], e->out[2]);
		l->var[0] = e->var[0];
		l->n_vars = 1;
		l->borrows = 1;
		e->lends = 1;
	}
	return 0;
}

/* The backward walk: which layers run it, which inputs get a gradient,
 * and which of those add to one a later layer (in list order) gave. */
void model_plan_grads(struct model *m, int n)
{
	int first[MODEL_MAX_LAYERS]; /* the last layer to take i's output, whose
				      * backward gives i's gradient first */
	for (int i = 0; i < n; i++)
		first[i] = -1;
	for (int i = 0; i < n; i++) {
		struct layer *l = &m->layer[i];
		l->backward = l->n_vars > 0;
		for (int k = 0; k < l->n_src; k++) {
			int s = l->src[k];
			l->needs_dx[k] = s >= 0 && m->layer[s].backward;
			l->backward |= l->needs_dx[k];
		}
	}
	/* A fused activation's backward too, where the layer that applies it
	 * (batchnorm) is the one layer taking that layer's output. */
	int takers[MODEL_MAX_LAYERS] = {0};
	for (int i = 0; i < n; i++)
		for (int k = 0; k < m->layer[i].n_src; k++)
			if (m->layer[i].src[k] >= 0)
				takers[m->layer[i].src[k]]++;
	for (int i = 0; i + 1 < n; i++) {
		struct layer *l = &m->layer[i];
		if (l->act >= 0 && layer_fuses_back(l) && takers[i] == 1 && l->backward) {
			l->act_back = 1;
			l->drops_y = l->act == ACT_RELU;
			m->layer[i + 1].fused_back = 1;
		}
	}
	for (int i = n - 1; i >= 0; i--) {
		struct layer *l = &m->layer[i];
		for (int k = 0; k < l->n_src; k++)
			if (l->needs_dx[k]) {
				int s = l->src[k];
				l->accumulate[k] = first[s] >= 0;
				if (first[s] < 0)
					first[s] = i;
			}
	}
}

/* One buffer of the arena: its floats per row and the steps of the walk
 * from its first write to its last read (forward of layer i is step i,
 * the loss step n - 1, backward of layer i step 2n - 1 - i). */
struct span {
	size_t size, at;
	int from, to;
};

static void span_use(struct span *sp, int step)
{
	if (step < sp->from)
		sp->from = step;
	if (step > sp->to)
		sp->to = step;
}

/* Places spans[0..k) in one arena, biggest first, each at the lowest
 * offset no span overlapping it in time holds: its floats per row. */
static size_t place_spans(struct span *sp, int k)
{
	int *order = xmalloc(sizeof(int) * (size_t)(k ? k : 1));
	for (int i = 0; i < k; i++) {
		int j = i;
		while (j > 0 && sp[order[j - 1]].size < sp[i].size) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	size_t total = 0;
	for (int a = 0; a < k; a++) {
		struct span *s = &sp[order[a]];
		size_t at = 0;
		for (int moved = 1; moved;) {
			moved = 0;
			for (int b = 0; b < a; b++) {
				const struct span *o = &sp[order[b]];
				if (o->to < s->from || s->to < o->from)
					continue; /* never alive together */
				if (at < o->at + o->size && o->at < at + s->size) {
					at = o->at + o->size;
					moved = 1;
				}
			}
		}
		s->at = at;
		if (at + s->size > total)
			total = at + s->size;
	}
	free(order);
	return total;
}

/* Layer l's buffer: its floats per row, rounded up to 64 bytes. */
static size_t row_floats(const struct layer *l) { return (l->out_size + 15) / 16 * 16; }

/* A span for every output that is not its input's (an alias shares its
 * input's; ystore[i]: layer i's span, -1 for the model's input), alive
 * from its write to its consumers' forward, the loss's (step n - 1
 * training, n evaluating) and, training, their backward where it reads
 * its input. Returns how many spans. */
static int output_spans(const struct model *m, int n, struct span *sp, int *ystore, int training)
{
	int k = 0, back0 = 2 * n - 1; /* backward of layer i: back0 - i */
	for (int i = 0; i < n; i++) {
		const struct layer *l = &m->layer[i];
		if (layer_is_alias(l)) {
			ystore[i] = l->src[0] < 0 ? -1 : ystore[l->src[0]];
		} else {
			ystore[i] = k; /* none for a dropped y: its span is empty */
			sp[k++] = (struct span){l->drops_y ? 0 : row_floats(l), 0, l->fused ? i - 1 : i, i};
		}
	}
	for (int c = 0; c < n; c++) {
		const struct layer *l = &m->layer[c];
		for (int q = 0; q < l->n_src; q++) {
			int s = l->src[q];
			if (s < 0 || ystore[s] < 0)
				continue;
			span_use(&sp[ystore[s]], c);
			if (training && l->backward && layer_reads_x_back(l))
				span_use(&sp[ystore[s]], back0 - c);
		}
	}
	if (ystore[n - 1] >= 0)
		span_use(&sp[ystore[n - 1]], training ? n - 1 : n);
	return k;
}

/* A span for each layer's own memory from k on (kstore[i], wstore[i]:
 * layer i's, -1 for none): what its forward keeps, alive until its
 * backward reads it (training; evaluating, its forward only), and the
 * scratch of its backward (training). Returns the spans in all. */
static int own_spans(const struct model *m, int n, struct span *sp, int k, int *kstore,
		     int *wstore, int training)
{
	int back0 = 2 * n - 1;
	for (int i = 0; i < n; i++) {
		const struct layer *l = &m->layer[i];
		int back = training && l->backward;
		kstore[i] = wstore[i] = -1;
		if (l->keep_size) {
			kstore[i] = k;
			sp[k++] = (struct span){(l->keep_size + 15) / 16 * 16, 0, i,
						back ? back0 - i : i};
		}
		if (l->work_size && back) {
			wstore[i] = k;
			sp[k++] = (struct span){(l->work_size + 15) / 16 * 16, 0, back0 - i, back0 - i};
		}
	}
	return k;
}

/* The arena's plan: every output that is not its input's (an alias) and
 * every gradient a layer's backward reads get a span; a layer that alone
 * gives its input's gradient, and can write it over its own (in place),
 * shares its span with that gradient. */
void model_plan_arena(struct model *m, int n)
{
	int *ystore = xmalloc(sizeof(int) * (size_t)n), *dstore = xmalloc(sizeof(int) * (size_t)n);
	struct span *sp = xcalloc(4 * (size_t)n, sizeof(*sp));
	int *kstore = xmalloc(sizeof(int) * (size_t)n), *wstore = xmalloc(sizeof(int) * (size_t)n);
	int back0 = 2 * n - 1; /* backward of layer i: back0 - i */
	int k = output_spans(m, n, sp, ystore, 1);
	k = own_spans(m, n, sp, k, kstore, wstore, 1);
	m->unplanned_per_row = 0;
	for (int j = 0; j < k; j++)
		m->unplanned_per_row += sp[j].size;
	for (int i = 0; i < n; i++) /* one that applies act' itself reads its own y, */
		if (m->layer[i].act_back) /* or act(y) when it dropped y */
			span_use(&sp[ystore[i + m->layer[i].drops_y]], back0 - i);
	/* Gradients, last layer first: the loss writes the last one's. */
	/* users: the layers that give s a gradient; only: the last of them
	 * (the one, when there is one), only_k: which of its inputs s is */
	int users[MODEL_MAX_LAYERS] = {0}, only[MODEL_MAX_LAYERS], only_k[MODEL_MAX_LAYERS];
	for (int c = 0; c < n; c++)
		for (int q = 0; q < m->layer[c].n_src; q++)
			if (m->layer[c].needs_dx[q]) {
				int s = m->layer[c].src[q];
				users[s]++;
				only[s] = c;
				only_k[s] = q;
			}
	for (int s = n - 1; s >= 0; s--) {
		const struct layer *l = &m->layer[s];
		dstore[s] = -1;
		if (s < n - 1 && !l->backward)
			continue;
		int c = users[s] == 1 ? only[s] : -1;
		const struct layer *u = c >= 0 ? &m->layer[c] : NULL;
		if (u && dstore[c] >= 0 && (layer_is_alias(u) || (layer_in_place(u) &&
					     (!layer_is_merge(u) || only_k[s] == 0)))) {
			dstore[s] = dstore[c]; /* written over the gradient it came from */
			span_use(&sp[dstore[s]], back0 - s);
			continue;
		}
		dstore[s] = k;
		/* written first by the last layer to take it (only[s]) */
		int from = s == n - 1 ? n - 1 : back0 - only[s];
		sp[k] = (struct span){row_floats(l), 0, from, back0 - s};
		m->unplanned_per_row += sp[k++].size;
	}
	m->arena_per_row = place_spans(sp, k);
	for (int i = 0; i < n; i++) {
		m->y_at[i] = ystore[i] >= 0 ? sp[ystore[i]].at : MODEL_NO_BUFFER;
		m->dy_at[i] = dstore[i] >= 0 ? sp[dstore[i]].at : MODEL_NO_BUFFER;
		m->keep_at[i] = kstore[i] >= 0 ? sp[kstore[i]].at : MODEL_NO_BUFFER;
		m->work_at[i] = wstore[i] >= 0 ? sp[wstore[i]].at : MODEL_NO_BUFFER;
		m->keep_per_row += m->layer[i].keep_size;
	}
	/* Evaluating: outputs, each kept until the last forward that reads it
	 * (the loss reads the last), and what a layer keeps, for its own
	 * forward only. */
	int e = output_spans(m, n, sp, ystore, 0);
	e = own_spans(m, n, sp, e, kstore, wstore, 0);
	m->eval_per_row = place_spans(sp, e);
	for (int i = 0; i < n; i++) {
		m->y_eval_at[i] = ystore[i] >= 0 ? sp[ystore[i]].at : MODEL_NO_BUFFER;
		m->keep_eval_at[i] = kstore[i] >= 0 ? sp[kstore[i]].at : MODEL_NO_BUFFER;
	}
	free(kstore);
	free(wstore);
	/* An activation whose backward the layer before applies passes its dy
	 * on untouched: the two must be one buffer. */
	for (int i = 1; i < n; i++)
		if (m->layer[i].fused_back && dstore[i] != dstore[i - 1])
			check_fail("model", "plan_arena", "a fused activation's gradient apart",
				   __FILE__, __LINE__);
	free(ystore);
	free(dstore);
	free(sp);
}
