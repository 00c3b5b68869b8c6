/* Checkpoints of ckpt.h, read in a child process (sandbox.h) that a forged
 * file may crash without taking the job with it, and mtrain inspect. */
#include "ckpt.h"
#include "sandbox.h"
#include "check.h"
#include "ckpt_file.h"
#include "ckpt_meta.h"
#include "h5attr.h"
#include "hash.h"
#include "log.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The three readers in a child process (sandbox.h): their arguments, what
 * the child runs, and what it sends back. Each side bounds the sizes it is
 * sent, in case the other's memory was what the file damaged. */
#define SENT_PATH_MAX ((size_t)1 << 16)
#define SENT_CONFIG_MAX ((size_t)1 << 26)
#define SENT_CELLS_MAX ((size_t)1 << 40)
#define SENT_VARS_MAX (1 << 20)
enum read_mode { READ_VARS, READ_META, READ_ALL };
struct read_args {
	char *path;            /* first, as sandbox.h asks */
	enum read_mode mode;
	struct ckpt_var *vars; /* READ_VARS: the caller's variables */
	struct ckpt_var **all; /* READ_ALL: the variables found */
	int n, allow_extra;
	struct ckpt_meta *meta;
};

/* The variable's whole struct, shape and all, crosses the pipe: its rank
 * and dimensions are bounded before its data is allocated. */
static int cells_ok(const struct ckpt_var *v)
{
	return shape_fits(v->ndim, v->shape, SENT_CELLS_MAX);
}

/* The request: the path, the mode and, for READ_VARS, the variables'
 * names and shapes (the child allocates their data). */
static void read_ask(void *arg, struct sandbox_pipe *p)
{
	struct read_args *a = arg;
	sandbox_move_str(p, &a->path, SENT_PATH_MAX);
	sandbox_move(p, &a->mode, sizeof(a->mode));
	sandbox_move(p, &a->n, sizeof(a->n));
	sandbox_move(p, &a->allow_extra, sizeof(a->allow_extra));
	if (!p->sending) {
		p->failed |= !a->path || a->n < 0 || a->n > SENT_VARS_MAX;
		if (p->failed)
			return;
		a->meta = xcalloc(1, sizeof(*a->meta));
		a->all = a->mode == READ_ALL ? xcalloc(1, sizeof(*a->all)) : NULL;
		a->vars = a->mode == READ_VARS ? xcalloc((size_t)a->n + 1, sizeof(*a->vars)) : NULL;
	}
	for (int i = 0; a->mode == READ_VARS && i < a->n && !p->failed; i++) {
		struct ckpt_var *v = &a->vars[i];
		float *data = v->data;
		sandbox_move(p, v, sizeof(*v));
		v->data = data; /* the caller's, or NULL in the child */
		v->name[sizeof(v->name) - 1] = 0;
		if (!p->sending && !p->failed && cells_ok(v))
			v->data = xmalloc(ckpt_var_cells(v) * sizeof(float));
		p->failed |= !v->data;
	}
}

static int read_child(void *arg)
{
	struct read_args *a = arg;
	switch (a->mode) {
	case READ_ALL: return ckpt_read_all_here(a->path, a->all, &a->n, a->meta);
	case READ_VARS: return ckpt_read_here(a->path, a->vars, a->n, a->allow_extra, a->meta);
	default: return ckpt_read_meta_here(a->path, a->meta);
	}
}

/* The root attributes, config last. */
static void move_meta(struct ckpt_meta *m, struct sandbox_pipe *p)
{
	sandbox_move(p, m, sizeof(*m)); /* the receiver's config pointer is set below */
	sandbox_move_str(p, &m->config, SENT_CONFIG_MAX);
	if (!p->sending)
		m->created[sizeof(m->created) - 1] = m->version[sizeof(m->version) - 1] = 0;
}

static void move_vars(struct read_args *a, struct sandbox_pipe *p)
{
	if (a->mode == READ_ALL) {
		sandbox_move(p, &a->n, sizeof(a->n));
		p->failed |= a->n < 0 || a->n > SENT_VARS_MAX;
		if (!p->sending && !p->failed)
			*a->all = xcalloc((size_t)a->n + 1, sizeof(**a->all));
	}
	if (a->mode == READ_META || p->failed)
		return;
	struct ckpt_var *v = a->mode == READ_ALL ? *a->all : a->vars;
	for (int i = 0; i < a->n && !p->failed; i++) {
		if (a->mode == READ_ALL) {
			float *data = v[i].data;
			sandbox_move(p, &v[i], sizeof(v[i]));
			v[i].data = data; /* NULL in the parent */
			v[i].name[sizeof(v[i].name) - 1] = 0;
			if (!p->sending && !p->failed && cells_ok(&v[i]))
				v[i].data = xmalloc(ckpt_var_cells(&v[i]) * sizeof(float));
			p->failed |= !v[i].data;
		}
		sandbox_move(p, v[i].data, p->failed ? 0 : ckpt_var_cells(&v[i]) * sizeof(float));
	}
}

static void read_move(void *arg, struct sandbox_pipe *p)
{
	struct read_args *a = arg;
	move_meta(a->meta, p);
	move_vars(a, p);
}

const struct sandbox_reader ckpt_sandbox_reader = {
	.name = "checkpoint",
	.arg_size = sizeof(struct read_args),
	.ask = read_ask,
	.read = read_child,
	.move = read_move,
};

/* The parent's side of the three readers: a failure leaves nothing held. */
static int read_sandboxed(struct read_args *a)
{
	memset(a->meta, 0, sizeof(*a->meta));
	int rc = sandbox_read(a->path, &ckpt_sandbox_reader, a);
	if (rc) {
		if (a->mode == READ_ALL) {
			ckpt_free_vars(*a->all, a->n);
			*a->all = NULL;
			a->n = 0;
		}
		free(a->meta->config);
		memset(a->meta, 0, sizeof(*a->meta));
	}
	return rc;
}

int ckpt_read(const char *path, struct ckpt_var *vars, int n, int allow_extra,
	      struct ckpt_meta *meta)
{
	struct read_args a = {(char *)path, READ_VARS, vars, NULL, n, allow_extra, meta};
	return read_sandboxed(&a);
}

int ckpt_read_meta(const char *path, struct ckpt_meta *meta)
{
	struct read_args a = {.path = (char *)path, .mode = READ_META, .meta = meta};
	return read_sandboxed(&a);
}

int ckpt_read_all(const char *path, struct ckpt_var **vars, int *n, struct ckpt_meta *meta)
{
	struct read_args a = {.path = (char *)path, .mode = READ_ALL, .all = vars, .meta = meta};
	*vars = NULL;
	int rc = read_sandboxed(&a);
	*n = a.n;
	return rc;
}

void ckpt_free_vars(struct ckpt_var *vars, int n)
{
	for (int i = 0; vars && i < n; i++)
		free(vars[i].data);
	free(vars);
}

/* One variable's figures for inspect. */
struct var_stats {
	char shape[96];  /* e.g. "[784,256]", "[3,3,1,32]": JSON too */
	uint64_t fnv;    /* FNV-1a 64 of its bytes */
	double min, max, mean;
};

static struct var_stats stats_of(const struct ckpt_var *v)
{
	struct var_stats st = {.min = INFINITY, .max = -INFINITY};
	size_t count = ckpt_var_cells(v);
	double sum = 0;
	for (size_t i = 0; i < count; i++) {
		double x = v->data[i];
		st.min = x < st.min ? x : st.min;
		st.max = x > st.max ? x : st.max;
		sum += x;
	}
	st.mean = count ? sum / (double)count : 0.0;
	st.fnv = fnv1a64(FNV1A64_INIT, v->data, count * sizeof(float));
	shape_text(v->ndim, v->shape, st.shape, sizeof(st.shape));
	return st;
}

static void print_text(FILE *out, const char *path, const struct ckpt_meta *m,
		       const struct ckpt_var *v, int n)
{
	ckpt_meta_print(out, path, m);
	fprintf(out, "%-44s %-12s %-8s %-16s %12s %12s %12s\n", "name", "shape", "dtype",
		"fnv1a64", "min", "max", "mean");
	for (int j = 0; j < n; j++) {
		struct var_stats st = stats_of(&v[j]);
		fprintf(out, "%-44s %-12s %-8s %016llx %12.6g %12.6g %12.6g\n", v[j].name, st.shape,
			"float32", (unsigned long long)st.fnv, st.min, st.max, st.mean);
	}
	int64_t step = m->global_step;
	fprintf(out, "%-44s %-12s %-8s %016llx %12lld %12lld %12lld\n", "global_step", "[1]",
		"int64", (unsigned long long)fnv1a64(FNV1A64_INIT, &step, sizeof(step)),
		(long long)step, (long long)step, (long long)step);
}

/* The same facts as one JSON object, for scripts. */
static void print_json(FILE *out, const char *path, const struct ckpt_meta *m,
		       const struct ckpt_var *v, int n)
{
	fputc('{', out);
	ckpt_meta_print_json(out, path, m);
	fputs("\"variables\":[", out);
	for (int j = 0; j < n; j++) {
		struct var_stats st = stats_of(&v[j]);
		char name[6 * CKPT_NAME_LEN], num[3][32];
		fprintf(out, "%s{\"name\":\"%s\",\"shape\":%s,\"dtype\":\"float32\","
			"\"fnv1a64\":\"%016llx\",\"min\":%s,\"max\":%s,\"mean\":%s}", j ? "," : "",
			json_escape(v[j].name, name, sizeof(name)), st.shape, (unsigned long long)st.fnv,
			json_num(st.min, num[0], 32), json_num(st.max, num[1], 32),
			json_num(st.mean, num[2], 32));
	}
	fputs("]}\n", out);
}

int ckpt_inspect(const char *path, int json, FILE *out)
{
	struct ckpt_var *v;
	struct ckpt_meta m;
	int n;
	if (ckpt_read_all(path, &v, &n, &m))
		return -1;
	if (json)
		print_json(out, path, &m, v, n);
	else
		print_text(out, path, &m, v, n);
	ckpt_free_vars(v, n);
	free(m.config);
	return 0;
}
