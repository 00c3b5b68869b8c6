/* The layer-list model of model.h. */
#include "model.h"
#include "check.h"
#include "model_plan.h"
#include "log.h"
#include "rng.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define RNG_STREAM_INIT 1

int model_specs(const struct config *cfg, struct layer_spec *spec, int *n)
{
	if (cfg->model[0])
		return layer_spec_parse(cfg->model, "--model", spec, MODEL_MAX_LAYERS, n);
	*n = layer_spec_mlp(cfg->hidden, cfg->n_hidden, (enum act_kind)cfg->act, spec,
			    MODEL_MAX_LAYERS);
	return 0;
}

int model_input_shape(const struct config *cfg, const char *path, const int data[3],
		      int in[3])
{
	int dim = data[0] * data[1] * data[2];
	memcpy(in, data, 3 * sizeof(*in));
	if (!cfg->input_shape[0])
		return 0;
	char end;
	if (sscanf(cfg->input_shape, "%d,%d,%d%c", &in[0], &in[1], &in[2], &end) != 3 ||
	    in[0] < 1 || in[1] < 1 || in[2] < 1)
		return user_error("--input-shape %s: expected H,W,C (three positive integers, "
				  "e.g. 28,28,1)", cfg->input_shape);
	/* Images ([N, H, W, C] data) have their shape: --input-shape may only
	 * repeat it. */
	if ((data[0] != 1 || data[1] != 1) && memcmp(in, data, 3 * sizeof(*in)))
		return user_error("--input-shape %s does not match the images of %s, %d,%d,%d "
				  "(drop --input-shape, or give the data's shape)", cfg->input_shape,
				  path, data[0], data[1], data[2]);
	if ((long long)in[0] * in[1] * in[2] != dim)
		return user_error("--input-shape %s is %lld values per row; the data's rows have %d",
				  cfg->input_shape, (long long)in[0] * in[1] * in[2], dim);
	return 0;
}

int model_check_images(const struct config *cfg, const struct layer_spec *spec, int n,
		       const int data[3])
{
	int d = data[2], i = 0;
	if (data[0] != 1 || data[1] != 1 || cfg->input_shape[0])
		return 0;
	/* Up to an embedding, which makes a sequence of flat rows of ids (a
	 * pool after it is over tokens) */
	while (i < n && !layer_kind_image(spec[i].kind) && spec[i].kind != LAYER_EMBEDDING)
		i++;
	if (i == n || spec[i].kind == LAYER_EMBEDDING)
		return 0;
	/* An example that fits: a square of one channel or of three. */
	char fits[64];
	snprintf(fits, sizeof(fits), "H*W*C = %d", d);
	for (int c = 1; c <= 3; c += 2) {
		int side = (int)lround(sqrt((double)d / c));
		if ((long long)side * side * c == d) {
			snprintf(fits, sizeof(fits), "e.g. %d,%d,%d", side, side, c);
			break;
		}
	}
	return user_error("--model: layer %d (%s) needs an image, but the data's rows are flat "
			  "[%d]: give their shape with --input-shape H,W,C (%s)", i + 1,
			  layer_names[spec[i].kind], d, fits);
}

/* "28x28x16" of shape in buf. */
static const char *hwc_text(const int *shape, char *buf, size_t len)
{
	snprintf(buf, len, "%dx%dx%d", shape[0], shape[1], shape[2]);
	return buf;
}

/* Each layer's inputs, shapes and activation fusion, in list order. 0, or
 * -1 with a user_error. */
static int plan_shapes(struct model *m, const struct layer_spec *spec, int n, int classes)
{
	for (int i = 0; i < n; i++) {
		struct layer *l = &m->layer[i];
		char why[160];
		l->spec = spec[i];
		l->n_src = layer_is_merge(l) ? 2 : 1;
		for (int k = 0; k < 2; k++)
			l->src[k] = k < l->n_src ? layer_spec_src(spec, i, k) : -1;
		if (l->src[0] < -1 || l->src[1] < -1) /* a distance past the input */
			check_fail("model", "model_plan", "a layer's input before the model's",
				   __FILE__, __LINE__);
		const int *shape = l->src[0] < 0 ? m->in : m->layer[l->src[0]].out;
		memcpy(l->in, shape, sizeof(l->in));
		l->in_seq = l->src[0] >= 0 && m->layer[l->src[0]].seq;
		l->vocab = m->vocab;
		if (l->n_src == 2) {
			const int *other = l->src[1] < 0 ? m->in : m->layer[l->src[1]].out;
			char a[48], b[48];
			/* The stride a projection needs: 'same' gives ceil(in / s). */
			int s = other[0] > shape[0] ? (other[0] + shape[0] - 1) / shape[0] : 1;
			if (memcmp(other, shape, sizeof(l->in)))
				return user_error("--model: the block at character %d adds its main path's "
						  "%s to its %s's %s: an add needs one shape (a "
						  "projection shortcut changes it, e.g. "
						  "[MAIN|conv2d:%d:1:%d,batchnorm])", spec[i].at,
						  hwc_text(shape, a, sizeof(a)),
						  spec[i].size ? "shortcut" : "input",
						  hwc_text(other, b, sizeof(b)), shape[2], s);
		}
		if (layer_shape(l, classes, why, sizeof(why)))
			return user_error("--model: layer %d (%s%s%d): %s", i + 1,
					  layer_names[spec[i].kind],
					  spec[i].at ? ", written at character " : "", spec[i].at, why);
		/* An activation the layer before can apply in its own pass
		 * (the table's fuses_act column) is applied there. */
		l->act = -1;
		l->fused = i > 0 && l->src[0] == i - 1 && layer_fuses(&m->layer[i - 1], l);
		if (l->fused)
			m->layer[i - 1].act = layer_spec_act(&l->spec);
		if (l->out_size > m->max_width)
			m->max_width = l->out_size;
		if (l->cols_size > m->max_cols)
			m->max_cols = l->cols_size;
	}
	const struct layer *last = &m->layer[n - 1];
	/* A model of tokens that ends on a sequence predicts every token's
	 * next one: C values a token. */
	m->targets = m->vocab && last->seq ? last->out[1] : 1;
	if (m->targets > 1 && last->out[2] != classes)
		return user_error("--model: the last layer (%d, %s) gives %d values per token; the "
				  "vocabulary has %d tokens (end with dense)", n,
				  layer_names[last->spec.kind], last->out[2], classes);
	if (last->out_size != (size_t)classes * (size_t)m->targets)
		return user_error("--model: the last layer (%d, %s) gives %zu values per row; the "
				  "data has %d classes (end with dense)", n,
				  layer_names[last->spec.kind], last->out_size, classes);
	return 0;
}

void model_layer_names(const struct model *m, char (*names)[PARAM_NAME_LEN])
{
	const char *kinds[MODEL_MAX_LAYERS];
	int counts[MODEL_MAX_LAYERS] = {0}, n_kinds = 0;
	for (int i = 0; i < m->n_layers; i++) {
		const char *kind = layer_class_name(&m->layer[i]);
		int k = 0;
		while (k < n_kinds && strcmp(kinds[k], kind))
			k++;
		if (k == n_kinds)
			kinds[n_kinds++] = kind;
		params_layer_name(kind, counts[k]++, names[i], PARAM_NAME_LEN);
	}
}

/* The registry: each layer with variables registers them under its Keras
 * name (model_layer_names: a kind with variables counts only its own
 * layers), the trainable variables first, then the non-trainable ones
 * (params.h). */
static void plan_vars(struct model *m, int n)
{
	char names[MODEL_MAX_LAYERS][PARAM_NAME_LEN]; /* 48 KiB */
	model_layer_names(m, names);
	for (int t = 1; t >= 0; t--)
		for (int i = 0; i < n; i++)
			if (layer_keras_name(&m->layer[i]))
				layer_add_vars(&m->layer[i], &m->reg, names[i], t);
}

int model_check_targets(const struct model *m, int labels, const char *path)
{
	if (m->targets == labels)
		return 0;
	if (labels > 1)
		return user_error("--model: its last layer predicts once per row, but %s holds "
				  "tokens whose every one has a target (end on the sequence, e.g. "
				  "...,layernorm,dense, without a pooling)", path);
	return user_error("%s: rows with one label each, but the model predicts every token's "
			  "next one (a language model's data is a file of tokens)", path);
}

int model_plan(struct model *m, const struct layer_spec *spec, int n, const int in[3],
	       int classes, uint64_t seed)
{
	return model_plan_vocab(m, spec, n, in, classes, 0, seed);
}

int model_plan_vocab(struct model *m, const struct layer_spec *spec, int n, const int in[3],
		     int classes, int vocab, uint64_t seed)
{
	memset(m, 0, sizeof(*m));
	m->vocab = vocab;
	memcpy(m->in, in, sizeof(m->in));
	m->in_dim = in[0] * in[1] * in[2];
	m->classes = classes;
	m->seed = seed;
	m->n_layers = n;
	m->max_width = (size_t)m->in_dim > (size_t)classes ? (size_t)m->in_dim : (size_t)classes;
	params_init(&m->reg);
	if (plan_shapes(m, spec, n, classes))
		return -1;
	plan_vars(m, n);
	if (model_plan_tied(m, n))
		return -1;
	model_plan_grads(m, n);
	model_plan_arena(m, n);
	return 0;
}

void model_init(struct model *m, const struct backend *be, int in_dim, int classes,
		const int *hidden, int n_hidden, enum act_kind act, int max_rows)
{
	struct layer_spec spec[MODEL_MAX_LAYERS];
	int n = layer_spec_mlp(hidden, n_hidden, act, spec, MODEL_MAX_LAYERS);
	const int in[3] = {1, 1, in_dim};
	if (model_plan(m, spec, n, in, classes, 0))
		abort();
	model_alloc(m, be, max_rows);
}

/* Floats of the im2col buffer: the most any conv2d's block of rows takes
 * (none where the backend convolves in kernels of its own). */
static size_t model_cols_floats(const struct model *m, const struct backend *be, int rows)
{
	size_t most = 0;
	if (be->conv)
		return 0;
	for (int i = 0; i < m->n_layers; i++) {
		const struct layer *l = &m->layer[i];
		size_t n = l->cols_size * (size_t)layer_cols_rows(l, be, rows);
		if (n > most)
			most = n;
	}
	return most;
}

/* The rows a training call may take: train_rows, at most max_rows. */
static size_t train_rows(const struct model *m, int max_rows)
{
	return (size_t)(m->train_rows > 0 && m->train_rows < max_rows ? m->train_rows : max_rows);
}

double model_arena_bytes(const struct model *m, int max_rows)
{
	double train = (double)train_rows(m, max_rows) * (double)m->arena_per_row,
	       eval = (double)max_rows * (double)m->eval_per_row;
	return 4.0 * (train > eval ? train : eval);
}

/* Points the layers' outputs at the places of training's plan (training
 * set) or evaluation's, in the arena. */
static void use_layout(struct model *m, int training)
{
	if (m->layout == training)
		return;
	size_t R = training ? train_rows(m, m->max_rows) : (size_t)m->max_rows;
	const size_t *at = training ? m->y_at : m->y_eval_at;
	const size_t *keep = training ? m->keep_at : m->keep_eval_at;
	for (int i = 0; i < m->n_layers; i++) {
		struct layer *l = &m->layer[i];
		l->y = l->drops_y ? NULL /* never kept: act(y) stands for it */
			: at[i] != MODEL_NO_BUFFER ? m->arena + R * at[i]
			: l->src[0] < 0 ? m->x : m->layer[l->src[0]].y; /* an alias */
		l->keep = keep[i] != MODEL_NO_BUFFER ? m->arena + R * keep[i] : NULL;
	}
	m->layout = training;
}

double model_bytes(const struct model *m, int max_rows)
{
	double R = max_rows,
	       per_row = m->in_dim + 1.0 + (double)m->max_width + (double)m->max_cols;
	double aux = 0;
	for (int i = 0; i < m->n_layers; i++)
		aux += (double)m->layer[i].aux_size;
	/* w, g, the layers' own, the arena; x, y, acc, cols (at most: a backend
	 * with a cols_budget takes less) */
	return 4.0 * (2.0 * (double)m->reg.total + aux + R * per_row) +
	       model_arena_bytes(m, max_rows);
}

void model_alloc(struct model *m, const struct backend *be, int max_rows)
{
	m->be = be;
	m->max_rows = max_rows;
	size_t P = m->reg.total, R = (size_t)max_rows;
	size_t room = m->room > P ? m->room : P;
	m->w = be->alloc(be, room * sizeof(float));
	m->g = be->alloc(be, room * sizeof(float));
	m->x = m->x_buf = be->alloc(be, R * m->in_dim * sizeof(float));
	m->y = m->y_buf = be->alloc(be, R * (size_t)m->targets * sizeof(int32_t));
	m->arena = be->alloc(be, (size_t)model_arena_bytes(m, max_rows));
	size_t Rt = train_rows(m, max_rows);
	for (int i = 0; i < m->n_layers; i++) {
		struct layer *l = &m->layer[i];
		l->dy = m->dy_at[i] != MODEL_NO_BUFFER ? m->arena + Rt * m->dy_at[i] : NULL;
		l->aux = l->aux_size ? be->alloc(be, l->aux_size * sizeof(float)) : NULL;
	}
	m->layout = -1;
	use_layout(m, 1);
	m->dlogits = m->layer[m->n_layers - 1].dy;
	m->acc = be->alloc(be, R * m->max_width * sizeof(float));
	m->stats = be->alloc(be, 2 * sizeof(float));
	size_t cols = model_cols_floats(m, be, max_rows);
	m->cols = cols ? be->alloc(be, cols * sizeof(float)) : NULL;
}

void model_free(struct model *m)
{
	const struct backend *be = m->be;
	if (!be)
		return;
	be->free(be, m->w);
	be->free(be, m->g);
	be->free(be, m->x_buf);
	be->free(be, m->y_buf);
	be->free(be, m->arena);
	for (int i = 0; i < m->n_layers; i++)
		be->free(be, m->layer[i].aux);
	be->free(be, m->acc);
	be->free(be, m->stats);
	be->free(be, m->cols);
	memset(m, 0, sizeof(*m));
}

void model_glorot(const struct model *m, uint64_t seed, float *host_w)
{
	struct rng r;
	rng_init(&r, seed, RNG_STREAM_INIT);
	memset(host_w, 0, m->reg.total * sizeof(float));
	for (int i = 0; i < m->n_layers; i++)
		layer_init(&m->layer[i], &r, host_w);
}

double model_flops_per_row(const struct model *m)
{
	double f = 0;
	for (int i = 0; i < m->n_layers; i++) {
		const struct layer *l = &m->layer[i];
		double fwd = layer_flops(l);
		/* backward: the weight gradient, and the input's unless none is needed */
		f += fwd * (l->n_vars ? (l->needs_dx[0] ? 3 : 2) : 1);
	}
	return f;
}

/* The model reads its inputs at x and its labels at y: the outputs that
 * are their input's (aliases) follow. */
static void read_input_at(struct model *m, float *x, int32_t *y)
{
	m->y = y;
	if (m->x == x)
		return;
	m->x = x;
	int layout = m->layout;
	m->layout = -1;
	if (layout >= 0)
		use_layout(m, layout);
}

void model_set_batch(struct model *m, const float *x, const int32_t *y, int rows)
{
	read_input_at(m, m->x_buf, m->y_buf);
	m->be->copy_in(m->be, m->x, x, (size_t)rows * m->in_dim * sizeof(float));
	m->be->copy_in(m->be, m->y, y, (size_t)rows * (size_t)m->targets * sizeof(int32_t));
}

void model_set_batch_async(struct model *m, const float *x, const int32_t *y, int rows)
{
	if (m->be->memory == BACKEND_HOST) { /* the same memory: nothing to move */
		read_input_at(m, (float *)x, (int32_t *)y); /* read only */
		return;
	}
	read_input_at(m, m->x_buf, m->y_buf);
	m->be->copy_in_async(m->be, m->x, x, (size_t)rows * m->in_dim * sizeof(float));
	m->be->copy_in_async(m->be, m->y, y, (size_t)rows * (size_t)m->targets * sizeof(int32_t));
}

void model_sync_bn(struct model *m, sum_fn sum, void *ctx, long global_rows)
{
	m->sum = sum;
	m->sum_ctx = ctx;
	m->global_rows = global_rows;
}

/* What layer i may touch in a call over rows rows: its input, the
 * output of the activation it applies, its variables' and gradients'
 * places, the shared im2col buffer, the step's facts and the listeners. */
static struct layer_ctx layer_ctx(const struct model *m, int i, int rows, int training,
				  grad_ready_fn ready, void *ready_ctx)
{
	const struct layer *l = &m->layer[i];
	struct layer_ctx c = {.be = m->be, .rows = rows, .training = training,
			      .x = l->src[0] < 0 ? m->x : m->layer[l->src[0]].y,
			      .x2 = l->n_src < 2 ? NULL
				  : l->src[1] < 0 ? m->x : m->layer[l->src[1]].y,
			      .act_y = l->act >= 0 ? m->layer[i + 1].y : NULL,
			      .cols = m->cols, .keep = l->keep, .seed = m->seed ^ (uint64_t)i << 56,
			      .step = m->step, .row0 = m->row0, .sum = m->sum,
			      .sum_ctx = m->sum_ctx, .global_rows = m->global_rows,
			      .ready = ready, .ready_ctx = ready_ctx};
	for (int v = 0; v < l->n_vars; v++) {
		c.w[v] = m->w + l->var[v];
		c.g[v] = m->g + l->var[v];
	}
	return c;
}

void model_update_state(struct model *m)
{
	for (int i = 0; i < m->n_layers; i++) {
		struct layer_ctx c = layer_ctx(m, i, 0, 1, NULL, NULL);
		layer_update_state(&m->layer[i], &c);
	}
}

struct layer_ctx model_layer_ctx(const struct model *m, int i, int rows, int training)
{
	return layer_ctx(m, i, rows, training, NULL, NULL);
}

void model_set_position(struct model *m, long step, long row0)
{
	m->step = step;
	m->row0 = row0;
}

void model_layer_forward(struct model *m, int i, int rows, int training)
{
	if ((size_t)rows > (training ? train_rows(m, m->max_rows) : (size_t)m->max_rows))
		check_fail("model", "model_layer_forward", "more rows than the model was allocated for",
			   __FILE__, __LINE__);
	use_layout(m, training);
	struct layer_ctx c = layer_ctx(m, i, rows, training, NULL, NULL);
	layer_forward(&m->layer[i], &c);
}

void model_forward(struct model *m, int rows, int training, float grad_scale)
{
	for (int i = 0; i < m->n_layers; i++)
		model_layer_forward(m, i, rows, training);
	m->be->xent(m->be, training ? m->dlogits : NULL, m->stats, m->layer[m->n_layers - 1].y,
		    m->y, rows * m->targets, m->classes, grad_scale);
}

void model_take_stats(struct model *m, float out[2])
{
	static const float zero[2] = {0.0f, 0.0f};
	m->be->copy_out(m->be, out, m->stats, 2 * sizeof(float));
	m->be->copy_in(m->be, m->stats, zero, sizeof(zero));
}

/* Gives layer l's input k the gradient g (rows, l's in_size): written
 * into its dy, or added to what a later layer gave it; nothing when g is
 * its dy already (the plan shares them). */
static void give(struct model *m, const struct layer *l, int k, const float *g, int rows)
{
	float *dst = m->layer[l->src[k]].dy;
	size_t n = (size_t)rows * l->in_size;
	if (dst == g)
		return;
	if (l->accumulate[k])
		m->be->add(m->be, dst, dst, g, n, NULL, ACT_RELU);
	else
		m->be->copy(m->be, dst, g, n * sizeof(float));
}

void model_layer_backward(struct model *m, int i, int rows, grad_ready_fn ready, void *ctx)
{
	struct layer *l = &m->layer[i];
	if (!l->backward)
		return;
	if (layer_is_merge(l)) { /* d(a + b) / da = d(a + b) / db = 1 */
		for (int k = 0; k < l->n_src; k++)
			if (l->needs_dx[k])
				give(m, l, k, l->dy, rows);
		return;
	}
	struct layer_ctx c = layer_ctx(m, i, rows, 1, ready, ctx);
	if (m->work_at[i] != MODEL_NO_BUFFER)
		c.work = m->arena + train_rows(m, m->max_rows) * m->work_at[i];
	float *dx = !l->needs_dx[0] ? NULL : l->accumulate[0] ? m->acc : m->layer[l->src[0]].dy;
	layer_backward(l, &c, l->dy, dx);
	if (dx == m->acc)
		give(m, l, 0, dx, rows);
}

void model_backward(struct model *m, int rows, grad_ready_fn ready, void *ctx)
{
	for (int i = m->n_layers - 1; i >= 0; i--)
		model_layer_backward(m, i, rows, ready, ctx);
}
