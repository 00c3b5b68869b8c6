/* The safetensors export of export.h. The file is an 8-byte little-endian
 * header length, a JSON header ({"name": {"dtype", "shape",
 * "data_offsets"}, ..., "__metadata__": {...}}, padded with spaces to a
 * multiple of 8 bytes), then the tensors' bytes back to back in header
 * order. */
#include "export.h"
#include "check.h"
#include "ckpt.h"
#include "ema.h"
#include "log.h"

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

/* Appends s to the header as a JSON string. */
static void put_json_str(FILE *h, const char *s)
{
	size_t len = strlen(s);
	char *buf = xmalloc(6 * len + 1);
	fprintf(h, "\"%s\"", json_escape(s, buf, 6 * len + 1));
	free(buf);
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
		put_json_str(h, names[i]);
		fprintf(h, ":{\"dtype\":\"F32\",\"shape\":[%ld", src[i]->shape[0]);
		if (src[i]->ndim > 1)
			fprintf(h, ",%ld", src[i]->shape[1]);
		fprintf(h, "],\"data_offsets\":[%zu,%zu]},", offset, offset + bytes);
		offset += bytes;
	}
	fprintf(h, "\"__metadata__\":{\"format\":\"pt\",\"producer\":\"mtrain\",\"global_step\":\"%ld\","
		"\"weights\":\"%s\",\"config\":", m->global_step, which == EXPORT_EMA ? "ema" : "raw");
	put_json_str(h, m->config ? m->config : "");
	fputs("}}", h);
	while ((ftell(h) + 8) % 8)
		fputc(' ', h);
	fclose(h);
	*len = size;
	return text;
}

/* Writes the file at tmp: 0, or -1 with errno. */
static int write_file(const char *tmp, const char *header, size_t hlen,
		      const struct ckpt_var **src, int n)
{
	FILE *f = fopen(tmp, "wb");
	if (!f)
		return -1;
	uint64_t len = hlen; /* little-endian on every machine mtrain runs on */
	int bad = fwrite(&len, 8, 1, f) != 1 || fwrite(header, 1, hlen, f) != hlen;
	for (int i = 0; i < n && !bad; i++) {
		size_t cells = ckpt_var_cells(src[i]);
		bad = fwrite(src[i]->data, sizeof(float), cells, f) != cells;
	}
	int why = bad ? errno : 0;
	bad = fflush(f) || fsync(fileno(f)) || bad;
	if (fclose(f) || bad) {
		errno = why ? why : errno;
		return -1;
	}
	return 0;
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
	for (int i = 0; i < n; i++) {
		if (!is_weight(vars, n, &vars[i]))
			continue;
		const struct ckpt_var *shadow = find_slot(vars, n, vars[i].name, EMA_SUFFIX);
		names[k] = vars[i].name;
		src[k++] = which == EXPORT_EMA && shadow ? shadow : &vars[i];
	}
	size_t hlen;
	char *header = make_header(src, names, k, &m, which, &hlen);
	char tmp[FILE_PATH_LEN];
	snprintf(tmp, sizeof(tmp), "%s.tmp", out);
	if (write_file(tmp, header, hlen, src, k) || rename(tmp, out)) {
		rc = user_error("export --out %s: cannot write: %s", out, strerror(errno));
		unlink(tmp);
	}
	free(header);
	free(names);
	free(src);
	ckpt_free_vars(vars, n);
	free(m.config);
	return rc;
}
