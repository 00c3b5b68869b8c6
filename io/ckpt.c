/* The checkpoint readers of ckpt.h, run in a child process (sandbox.h) that
 * a forged file may crash without taking the job with it: what crosses the
 * two pipes, and the parent's side. The readers themselves are ckpt_file.c. */
#include "ckpt.h"
#include "sandbox.h"
#include "check.h"
#include "ckpt_file.h"
#include "ckpt_meta.h"

#include <stdlib.h>
#include <string.h>

/* The three readers in a child process (sandbox.h): their arguments, what
 * the child runs, and what it sends back. Each side bounds the sizes it is
 * sent, in case the other's memory was what the file damaged. */
#define SENT_PATH_MAX ((size_t)1 << 16)
#define SENT_TEXT_MAX ((size_t)1 << 26)
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

void ckpt_var_move_head(struct sandbox_pipe *p, struct ckpt_var *v)
{
	sandbox_move(p, v->name, sizeof(v->name));
	sandbox_move(p, &v->ndim, sizeof(v->ndim));
	sandbox_move(p, v->shape, sizeof(v->shape));
	if (p->sending || p->failed)
		return;
	v->name[sizeof(v->name) - 1] = 0;
	v->data = shape_fits(v->ndim, v->shape, SENT_CELLS_MAX)
			  ? xmalloc(ckpt_var_cells(v) * sizeof(float))
			  : NULL;
	p->failed |= !v->data;
}

void ckpt_var_move_data(struct sandbox_pipe *p, struct ckpt_var *v)
{
	sandbox_move(p, v->data, p->failed ? 0 : ckpt_var_cells(v) * sizeof(float));
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
	for (int i = 0; a->mode == READ_VARS && i < a->n && !p->failed; i++)
		ckpt_var_move_head(p, &a->vars[i]);
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

/* One member of the root attributes (ckpt_meta_visit), down the pipe. */
static void move_member(void *ctx, enum ckpt_member kind, void *member, size_t size)
{
	struct sandbox_pipe *p = ctx;
	if (kind == CKPT_MEMBER_TEXT) {
		sandbox_move_str(p, (char **)member, SENT_TEXT_MAX);
		return;
	}
	sandbox_move(p, member, size);
	if (kind == CKPT_MEMBER_CHARS && !p->sending)
		((char *)member)[size - 1] = 0;
}

/* The result: the root attributes, field by field of their table; then
 * the variables (READ_ALL: how many and each one's name and shape first). */
static void read_move(void *arg, struct sandbox_pipe *p)
{
	struct read_args *a = arg;
	ckpt_meta_visit(a->meta, move_member, p);
	if (a->mode == READ_META)
		return;
	if (a->mode == READ_ALL) {
		sandbox_move(p, &a->n, sizeof(a->n));
		p->failed |= a->n < 0 || a->n > SENT_VARS_MAX;
		if (!p->sending && !p->failed)
			*a->all = xcalloc((size_t)a->n + 1, sizeof(**a->all));
	}
	struct ckpt_var *v = a->mode == READ_ALL ? *a->all : a->vars;
	for (int i = 0; i < a->n && !p->failed; i++) {
		if (a->mode == READ_ALL)
			ckpt_var_move_head(p, &v[i]);
		ckpt_var_move_data(p, &v[i]);
	}
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
		ckpt_meta_free(a->meta);
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
