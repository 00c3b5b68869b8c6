/* init_from.h: the file's tensors (io/weights_file.h, or an mtrain
 * checkpoint's variables) matched to the registry by name. */
#include "init_from.h"
#include "check.h"
#include "ckpt.h"
#include "keras.h"
#include "log.h"
#include "weights_file.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LISTED_MAX 8 /* names a line lists before "and N more" */

/* Appends name to a list line ("a, b, c"), counting what goes past
 * LISTED_MAX. */
static void list_add(char *line, size_t len, int *count, const char *name)
{
	if ((*count)++ < LISTED_MAX) {
		size_t used = strlen(line);
		snprintf(line + used, len - used, "%s%s", used ? ", " : "", name);
	}
}

static void list_end(char *line, size_t len, int count)
{
	size_t used = strlen(line);
	if (count > LISTED_MAX)
		snprintf(line + used, len - used, " and %d more", count - LISTED_MAX);
}

/* The index of the file's tensor called key, or -1. */
static int find(const struct ckpt_var *vars, int n, const char *key)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(vars[i].name, key))
			return i;
	return -1;
}

/* Matches the registry of m against vars[0..n) (read from path, of kind)
 * and copies into host_w; used[i] marks the tensors taken. */
static int match(const struct config *cfg, const struct model *m, enum weights_kind kind,
		 const struct ckpt_var *vars, int n, char *used, float *host_w)
{
	const char *path = cfg->init_from;
	int keras = kind == WEIGHTS_KERAS || kind == WEIGHTS_KERAS_H5;
	char(*keys)[PARAM_NAME_LEN] = xcalloc((size_t)m->reg.n + 1, PARAM_NAME_LEN);
	keras_var_keys(m, keys);
	regex_t skip;
	int skipping = cfg->init_skip[0] && config_init_skip(cfg, &skip) == 0;
	char missing[1024] = "";
	int n_missing = 0, taken = 0, skipped = 0, rc = 0;
	for (int p = 0; p < m->reg.n && !rc; p++) {
		const struct param *q = &m->reg.p[p];
		int i = find(vars, n, keras ? keys[p] : q->name);
		if (skipping && regexec(&skip, q->name, 0, NULL, 0) == 0) {
			if (i >= 0) /* the model has it: not one to warn of */
				used[i] = 1;
			skipped++;
			continue;
		}
		char name[2 * PARAM_NAME_LEN];
		if (keras)
			snprintf(name, sizeof(name), "%s (%s)", q->name, keys[p]);
		else
			snprintf(name, sizeof(name), "%s", q->name);
		if (i < 0) {
			list_add(missing, sizeof(missing), &n_missing, name);
			continue;
		}
		used[i] = 1;
		if (vars[i].ndim != q->ndim || memcmp(vars[i].shape, q->shape, sizeof(q->shape))) {
			char theirs[96], ours[96];
			shape_text(vars[i].ndim, vars[i].shape, theirs, sizeof(theirs));
			shape_text(q->ndim, q->shape, ours, sizeof(ours));
			rc = user_error("--init-from %s: %s is %s there and %s in this model; "
					"--init-skip can leave it fresh", path, name, theirs, ours);
			break;
		}
		size_t bad = 0;
		while (bad < q->size && isfinite(vars[i].data[bad]))
			bad++;
		if (bad < q->size) {
			rc = user_error("--init-from %s: %s holds %s (value %zu of %zu)", path, name,
					isnan(vars[i].data[bad]) ? "NaN" : "Inf", bad + 1, q->size);
			break;
		}
		memcpy(host_w + q->offset, vars[i].data, q->size * sizeof(float));
		taken++;
	}
	if (!rc && n_missing) {
		list_end(missing, sizeof(missing), n_missing);
		rc = user_error("--init-from %s (%s) lacks %d of this model's variables: %s; "
				"--init-skip can leave them fresh", path, weights_kind_names[kind],
				n_missing, missing);
	}
	if (skipping)
		regfree(&skip);
	if (!rc && skipping && !skipped) /* a typo would skip nothing unnoticed */
		log_warn("--init-skip '%s' matches none of this model's variables", cfg->init_skip);
	free(keys);
	if (!rc)
		log_info("init-from %s (%s): %d variables from it, %d left fresh (--init-skip)", path,
			 weights_kind_names[kind], taken, skipped);
	return rc;
}

int init_from_read(const struct config *cfg, const struct model *m, float *host_w)
{
	const char *path = cfg->init_from;
	enum weights_kind kind;
	struct ckpt_var *vars = NULL;
	struct ckpt_meta meta;
	int n = 0;
	int rc = weights_read(path, &kind, &vars, &n);
	if (!rc && kind == WEIGHTS_CKPT) {
		ckpt_free_vars(vars, n);
		rc = ckpt_read_all(path, &vars, &n, &meta);
		if (!rc)
			ckpt_meta_free(&meta);
	}
	if (rc) /* the reader's line names the file */
		return rc;
	char *used = xcalloc((size_t)n + 1, 1);
	rc = match(cfg, m, kind, vars, n, used, host_w);
	/* What the file holds and the model does not take: one line. */
	char extra[1024] = "";
	int n_extra = 0;
	for (int i = 0; i < n && !rc; i++)
		if (!used[i] && !(kind == WEIGHTS_CKPT && ckpt_var_is_slot(vars, n, &vars[i])))
			list_add(extra, sizeof(extra), &n_extra, vars[i].name);
	if (n_extra) {
		list_end(extra, sizeof(extra), n_extra);
		log_warn("--init-from %s holds %d variables this model does not have: %s", path,
			 n_extra, extra);
	}
	free(used);
	ckpt_free_vars(vars, n);
	return rc;
}
