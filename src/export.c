/* The exports of export.h: safetensors, and Keras' two files (keras.h,
 * weights_file.h). A safetensors file is an 8-byte little-endian header
 * length, a JSON header ({"name": {"dtype", "shape",
 * "data_offsets"}, ..., "__metadata__": {...}}, padded with spaces to a
 * multiple of 8 bytes), then the tensors' bytes back to back in header
 * order. */
#include "export.h"
#include "check.h"
#include "ckpt.h"
#include "ema.h"
#include "keras.h"
#include "layers.h"
#include "log.h"
#include "paths.h"
#include "weights_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* A checkpoint read for an export, and the tensors it exports: src[i]
 * holds the values written under names[i] (a variable's, or its shadow's
 * for EXPORT_EMA), k of them. */
struct picked {
	struct ckpt_var *vars;
	int n;
	struct ckpt_meta meta;
	const struct ckpt_var **src;
	const char **names;
	int k;
};

static void pick_free(struct picked *p)
{
	free(p->names);
	free(p->src);
	ckpt_free_vars(p->vars, p->n);
	ckpt_meta_free(&p->meta);
}

/* Reads ckpt and picks what an export of which weights to out holds. 0, or
 * RC_USER/RC_CORRUPT with a user_error (a weight without its shadow under
 * EXPORT_EMA, out naming ckpt itself); free p with pick_free either way. */
static int pick(const char *ckpt, const char *out, enum export_weights which, struct picked *p)
{
	memset(p, 0, sizeof(*p));
	int rc = ckpt_read_all(ckpt, &p->vars, &p->n, &p->meta);
	if (rc)
		return rc;
	const struct ckpt_var *vars = p->vars;
	int n = p->n;
	p->src = xcalloc((size_t)n + 1, sizeof(*p->src));
	p->names = xcalloc((size_t)n + 1, sizeof(*p->names));
	for (int i = 0; i < n; i++) {
		if (ckpt_var_is_slot(vars, n, &vars[i]))
			continue;
		/* A non-trainable variable has no shadow: its own values go with
		 * the EMA weights too, as evaluation uses them. */
		const struct ckpt_var *shadow = layer_var_is_state(vars[i].name)
							? &vars[i]
							: find_slot(vars, n, vars[i].name, EMA_SUFFIX);
		if (which == EXPORT_EMA && !shadow)
			return user_error("%s: %s has no %s/%s to export with --weights ema", ckpt,
					  vars[i].name, vars[i].name, EMA_SUFFIX);
		p->names[p->k] = vars[i].name;
		p->src[p->k++] = which == EXPORT_EMA ? shadow : &vars[i];
	}
	if (path_same_file(ckpt, out))
		return user_error("export --out %s: is the checkpoint being exported", out);
	return 0;
}

int export_safetensors(const char *ckpt, const char *out, enum export_weights which)
{
	struct picked p;
	int rc = pick(ckpt, out, which, &p);
	size_t hlen = 0;
	char *header = rc ? NULL : make_header(p.src, p.names, p.k, &p.meta, which, &hlen);
	if (!rc && write_file(out, header, hlen, p.src, p.k))
		rc = user_error("export --out %s: cannot write: %s", out, strerror(errno));
	free(header);
	pick_free(&p);
	return rc;
}

/* The token ids' range of a model of specs spec[0..n): a model with an
 * embedding was trained on a file of tokens, whose classes are its
 * vocabulary; else 0. */
static int spec_vocab(const struct layer_spec *spec, int n, int classes)
{
	for (int i = 0; i < n; i++)
		if (spec[i].kind == LAYER_EMBEDDING)
			return classes;
	return 0;
}

int export_plan_model(const char *path, const struct ckpt_meta *meta, struct model *m,
		      const char **why)
{
	struct config cfg;
	struct layer_spec spec[MODEL_MAX_LAYERS];
	int n = 0, in[3];
	const int flat[3] = {1, 1, meta->input_dim};
	config_defaults(&cfg);
	*why = NULL;
	if (!meta->config)
		*why = "the file holds no configuration";
	else if (config_parse_text(&cfg, meta->config, "the checkpoint's config") ||
		 model_specs(&cfg, spec, &n))
		*why = "this mtrain cannot read its configuration's model";
	else if (sscanf(meta->input_shape, "%d,%d,%d", &in[0], &in[1], &in[2]) != 3 &&
		 model_input_shape(&cfg, path, flat, in))
		*why = "its input shape is not stored (before format 4)";
	else if (model_plan_vocab(m, spec, n, in, meta->classes, spec_vocab(spec, n, meta->classes),
				  cfg.seed))
		*why = "its model cannot be laid out for its input";
	user_error_clear();
	return *why ? -1 : 0;
}

/* host_w (P) = the picked tensors, each under its registry name with the
 * registry's shape. 0, or RC_USER naming the first that does not fit. */
static int fill_registry(const char *ckpt, const struct model *model, const struct picked *p,
			 float *host_w)
{
	for (int r = 0; r < model->reg.n; r++) {
		const struct param *q = &model->reg.p[r];
		int i = 0;
		while (i < p->k && strcmp(p->names[i], q->name))
			i++;
		if (i == p->k || p->src[i]->ndim != q->ndim ||
		    memcmp(p->src[i]->shape, q->shape, sizeof(q->shape)))
			return user_error("%s: %s is not stored as its configuration's model has it",
					  ckpt, q->name);
		memcpy(host_w + q->offset, p->src[i]->data, q->size * sizeof(float));
	}
	return 0;
}

/* The bytes of the Keras file of model with values host_w: the weights
 * file, or (whole) the .keras zip around it and config. malloc'd, *len
 * bytes, or NULL when HDF5 or libzip failed. */
static void *keras_file(const struct model *model, const float *host_w, const char *config,
			int whole, size_t *len)
{
	size_t room = (size_t)keras_group_room(model);
	struct keras_layer_vars *layers = xcalloc(room, sizeof(*layers));
	struct ckpt_var *views = xcalloc((size_t)model->reg.n + 1, sizeof(*views));
	char(*names)[PARAM_NAME_LEN] = xcalloc(room, sizeof(*names));
	int n = keras_layer_vars(model, host_w, whole, layers, views, names);
	size_t h5_len = 0;
	void *h5 = keras_h5_image(layers, n, "mtrain", &h5_len), *bytes = h5;
	*len = h5_len;
	if (h5 && whole) {
		char *metadata = keras_metadata();
		bytes = keras_zip_image(metadata, config, h5, h5_len, len);
		free(metadata);
		free(h5);
	}
	free(names);
	free(views);
	free(layers);
	return bytes;
}

int export_keras(const char *ckpt, const char *out, enum export_weights which, int whole)
{
	struct picked p;
	struct model *model = xcalloc(1, sizeof(*model));
	const char *why = NULL;
	float *host_w = NULL;
	char *config = NULL;
	int rc = pick(ckpt, out, which, &p);
	if (!rc && export_plan_model(ckpt, &p.meta, model, &why))
		rc = user_error("%s: cannot export it for Keras: %s", ckpt, why);
	if (!rc) {
		host_w = xcalloc(model->reg.total + 1, sizeof(float));
		rc = fill_registry(ckpt, model, &p, host_w);
	}
	if (!rc && whole && !(config = keras_model_config(model)))
		rc = RC_USER;
	size_t len = 0;
	void *bytes = rc ? NULL : keras_file(model, host_w, config, whole, &len);
	if (!rc && !bytes)
		rc = user_error("export --out %s: HDF5 or libzip could not make the file (out of "
				"memory?)", out);
	else if (!rc && weights_write_file(out, bytes, len))
		rc = user_error("export --out %s: cannot write: %s", out, strerror(errno));
	free(bytes);
	free(config);
	free(host_w);
	free(model);
	pick_free(&p);
	return rc;
}
