/* The safetensors export of export.h. The file is an 8-byte little-endian
 * header length, a JSON header ({"name": {"dtype", "shape",
 * "data_offsets"}, ..., "__metadata__": {...}}, padded with spaces to a
 * multiple of 8 bytes), then the tensors' bytes back to back in header
 * order. */
#include "export.h"
#include "check.h"
#include "ckpt.h"
#include "ema.h"
#include "layers.h"
#include "log.h"
#include "paths.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether v is a model weight: not "<another variable>/<suffix>" (a
 * shadow or an optimizer slot). */
static int is_weight(const struct ckpt_var *vars, int n, const struct ckpt_var *v)
{
	for (int i = 0; i < n; i++) {
		size_t len = strlen(vars[i].name);
		if (&vars[i] != v && !strncmp(v->name, vars[i].name, len) && v->name[len] == '/')
			return 0;
	}
	return 1;
}

/* The variable called "<name>/<suffix>", or NULL. */
static const struct ckpt_var *find_slot(const struct ckpt_var *vars, int n, const char *name,
					const char *suffix)
{
	char want[CKPT_NAME_LEN + 32];
	snprintf(want, sizeof(want), "%s/%s", name, suffix);
	for (int i = 0; i < n; i++)
		if (!strcmp(vars[i].name, want))
			return &vars[i];
	return NULL;
}

/* The header: each exported tensor (src[i] holds the bytes written under
 * names[i]) and the metadata. malloc'd, padded; *len its size. */
static char *make_header(const struct ckpt_var **src, const char **names, int n,
			 const struct ckpt_meta *m, enum export_weights which, size_t *len)
{
	char *text = NULL;
	size_t size = 0, offset = 0;
	FILE *h = open_memstream(&text, &size);
	ALLOC_CHECK(h);
	fputc('{', h);
	for (int i = 0; i < n; i++) {
		size_t bytes = ckpt_var_cells(src[i]) * sizeof(float);
		json_put(h, names[i]);
		char shape[96];
		shape_text(src[i]->ndim, src[i]->shape, shape, sizeof(shape));
		fprintf(h, ":{\"dtype\":\"F32\",\"shape\":%s,\"data_offsets\":[%zu,%zu]},", shape,
			offset, offset + bytes);
		offset += bytes;
	}
	fprintf(h, "\"__metadata__\":{\"format\":\"pt\",\"producer\":\"mtrain\",\"global_step\":\"%ld\","
		"\"weights\":\"%s\",\"config\":", m->global_step, which == EXPORT_EMA ? "ema" : "raw");
	json_put(h, m->config ? m->config : "");
	fputs("}}", h);
	while ((ftell(h) + 8) % 8)
		fputc(' ', h);
	fclose(h);
	*len = size;
	return text;
}

/* Writes the file at out through a temporary one: 0, or -1 with errno. */
static int write_file(const char *out, const char *header, size_t hlen,
		      const struct ckpt_var **src, int n)
{
	char tmp[FILE_PATH_LEN];
	FILE *f = path_create_temp(out, tmp, sizeof(tmp));
	if (!f)
		return -1;
	uint64_t len = hlen; /* little-endian on every machine mtrain runs on */
	fwrite(&len, 8, 1, f);
	fwrite(header, 1, hlen, f);
	for (int i = 0; i < n; i++)
		fwrite(src[i]->data, sizeof(float), ckpt_var_cells(src[i]), f);
	return path_commit_temp(f, tmp, out);
}

int export_safetensors(const char *ckpt, const char *out, enum export_weights which)
{
	struct ckpt_var *vars;
	struct ckpt_meta m;
	int n;
	int rc = ckpt_read_all(ckpt, &vars, &n, &m);
	if (rc)
		return rc;
	const struct ckpt_var **src = xcalloc((size_t)n, sizeof(*src));
	const char **names = xcalloc((size_t)n, sizeof(*names));
	int k = 0;
	for (int i = 0; i < n && !rc; i++) {
		if (!is_weight(vars, n, &vars[i]))
			continue;
		/* A non-trainable variable has no shadow: its own values go with
		 * the EMA weights too, as evaluation uses them. */
		const struct ckpt_var *shadow = layer_var_is_state(vars[i].name)
							? &vars[i]
							: find_slot(vars, n, vars[i].name, EMA_SUFFIX);
		if (which == EXPORT_EMA && !shadow)
			rc = user_error("%s: %s has no %s/%s to export with --weights ema", ckpt,
					vars[i].name, vars[i].name, EMA_SUFFIX);
		names[k] = vars[i].name;
		src[k++] = which == EXPORT_EMA ? shadow : &vars[i];
	}
	if (!rc && path_same_file(ckpt, out))
		rc = user_error("export --out %s: is the checkpoint being exported", out);
	size_t hlen = 0;
	char *header = rc ? NULL : make_header(src, names, k, &m, which, &hlen);
	if (!rc && write_file(out, header, hlen, src, k))
		rc = user_error("export --out %s: cannot write: %s", out, strerror(errno));
	free(header);
	free(names);
	free(src);
	ckpt_free_vars(vars, n);
	ckpt_meta_free(&m);
	return rc;
}
