/* Data files loaded in a child process (sandbox.h): what the child does is
 * dataset_file.c's dataset_read_here; what comes back is checked here
 * before it is believed. */
#include "dataset.h"
#include "dataset_io.h"
#include "sandbox.h"
#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* dataset_load in a child process (sandbox.h). */
struct load_args {
	char *path; /* first, as sandbox.h asks */
	struct dataset *d;
	int part, parts;
	int streamed; /* the layout only (dataset_open) */
	int split;    /* DATASET_TRAIN or DATASET_EVAL */
};

static void load_ask(void *arg, struct sandbox_pipe *p)
{
	struct load_args *a = arg;
	sandbox_move_str(p, &a->path, PATH_LEN);
	sandbox_move(p, &a->part, sizeof(a->part));
	sandbox_move(p, &a->parts, sizeof(a->parts));
	sandbox_move(p, &a->streamed, sizeof(a->streamed));
	sandbox_move(p, &a->split, sizeof(a->split));
	if (!p->sending) {
		p->failed |= !a->path || a->parts < 1 || a->part < 0 || a->part >= a->parts;
		a->d = xcalloc(1, sizeof(*a->d));
	}
}

static int load_child(void *arg)
{
	struct load_args *a = arg;
	return dataset_read_here(a->d, a->path, a->part, a->parts, a->streamed, a->split);
}

/* The rows loaded: their place and size, then x and y. */
static void load_move(void *arg, struct sandbox_pipe *p)
{
	struct dataset *d = ((struct load_args *)arg)->d;
	int bytes = d->streamed ? d->x_bytes : d->x8 ? 1 : 4; /* the child's x8 or xf */
	sandbox_move(p, &d->n_total, sizeof(d->n_total));
	sandbox_move(p, &d->first, sizeof(d->first));
	sandbox_move(p, &d->n, sizeof(d->n));
	sandbox_move(p, &d->dim, sizeof(d->dim));
	sandbox_move(p, d->shape, sizeof(d->shape));
	sandbox_move(p, &d->classes, sizeof(d->classes));
	sandbox_move(p, &bytes, sizeof(bytes));
	sandbox_move(p, &d->streamed, sizeof(d->streamed));
	size_t cells = (size_t)d->n * (size_t)d->dim;
	if (d->streamed) {
		sandbox_move(p, &d->tokens, sizeof(d->tokens));
		sandbox_move(p, &d->split, sizeof(d->split));
		sandbox_move(p, &d->n_tokens, sizeof(d->n_tokens));
		sandbox_move(p, d->tokenizer, sizeof(d->tokenizer));
		sandbox_move(p, &d->text_bytes, sizeof(d->text_bytes));
		sandbox_move(p, &d->model_at, sizeof(d->model_at));
		sandbox_move(p, &d->model_len, sizeof(d->model_len));
		sandbox_move(p, &d->x_bytes, sizeof(d->x_bytes));
		sandbox_move(p, &d->x_at, sizeof(d->x_at));
		sandbox_move(p, &d->y_at, sizeof(d->y_at));
		sandbox_move(p, d->identity, sizeof(d->identity));
	}
	if (!p->sending) {
		/* Bounds on what was sent, in case the file damaged the child. */
		p->failed |= d->n < 0 || d->n > d->n_total || d->dim <= 0 || d->dim > INT32_MAX ||
			     d->shape[0] < 1 || d->shape[1] < 1 || d->shape[2] < 1 ||
			     (long long)d->shape[0] * d->shape[1] * d->shape[2] != d->dim ||
			     (bytes != 1 && bytes != 4 && !(bytes == 2 && d->tokens)) ||
			     (!d->streamed && cells > (size_t)1 << 40);
		struct load_args *a = arg; /* what was asked: the layout, or rows */
		p->failed |= d->streamed != a->streamed ||
			     d->first != d->n_total * a->part / a->parts ||
			     d->n != d->n_total * (a->part + 1) / a->parts - d->first;
		if (d->streamed)
			p->failed |= d->x_bytes != bytes || d->x_at < -1 || d->y_at < -1 ||
				      d->classes < 0 || d->classes > DATASET_MAX_CLASSES ||
				      (d->tokens && (d->x_at < 0 || d->n_tokens != d->n_total ||
						     d->model_at < -1 || d->model_len < 0));
		d->tokenizer[sizeof(d->tokenizer) - 1] = 0;
		if (p->failed || d->streamed)
			return;
		if (bytes == 1)
			d->x8 = xmalloc(cells);
		else
			d->xf = xmalloc(cells * sizeof(float));
		d->y = xmalloc((size_t)d->n * sizeof(int32_t));
	}
	if (d->streamed)
		return;
	sandbox_move(p, d->x8 ? (void *)d->x8 : (void *)d->xf, cells * (size_t)bytes);
	sandbox_move(p, d->y, (size_t)d->n * sizeof(int32_t));
}

const struct sandbox_reader dataset_sandbox_reader = {
	.name = "dataset",
	.arg_size = sizeof(struct load_args),
	.ask = load_ask,
	.read = load_child,
	.move = load_move,
};

/* dataset_load, or with streamed dataset_open's layout, in a child. */
int dataset_read_file(struct dataset *d, const char *path, int part, int parts, int streamed,
		      int split)
{
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	snprintf(d->path, sizeof(d->path), "%s", path);
	struct load_args a = {(char *)path, d, part, parts, streamed, split};
	int rc = sandbox_read(path, &dataset_sandbox_reader, &a);
	if (rc)
		dataset_free(d);
	return rc;
}

int dataset_load(struct dataset *d, const char *path, int part, int parts)
{
	return dataset_read_file(d, path, part, parts, 0, DATASET_TRAIN);
}
