/* One batch's forward and backward by mtrain's own model, written out for
 * a reference to compare with (tests/tools/torch_reference.py):
 *
 *   grad_dump CKPT DATA OUT.h5 ROW...
 *
 * rebuilds CKPT's model from its stored configuration (as `mtrain eval`
 * does) with every variable by name, reads rows ROW... of DATA (their
 * indices in the file, in that order; of a file of tokens, windows of the
 * checkpoint's --context at shift 0: window w begins at token w * T), and
 * on the CPU backend runs one training forward (at CKPT's global step, the
 * rows first in their global batch: dropout's key) with grad_scale 1/(R L)
 * (L labels a row: 1, or a language model's T), so that the gradients are
 * the mean loss's, then the backward. OUT.h5 holds
 *   rows     [R] int64      the row ids
 *   logits   [R L, C] float32 the last layer's output
 *   loss     [] float64     mtrain's mean cross-entropy (its float sum / R L)
 *   grads/NAME  each trainable variable's gradient, in its shape
 * Exit status 0, or 1 with a line on stderr. */
#include "backend.h"
#include "check.h"
#include "ckpt.h"
#include "config.h"
#include "dataset.h"
#include "log.h"
#include "model.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes data (of HDF5 type type, ndim dims; 0: a scalar) as f's dataset
 * path, making the groups on its way. */
static void put(hid_t f, const char *path, hid_t type, int ndim, const hsize_t *dims,
		const void *data)
{
	hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
	H5_CHECK(lcpl);
	H5_CHECK(H5Pset_create_intermediate_group(lcpl, 1));
	hid_t space = ndim ? H5Screate_simple(ndim, dims, NULL) : H5Screate(H5S_SCALAR);
	H5_CHECK(space);
	hid_t d = H5Dcreate2(f, path, type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
	H5_CHECK(d);
	H5_CHECK(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
	H5_CHECK(H5Dclose(d));
	H5_CHECK(H5Sclose(space));
	H5_CHECK(H5Pclose(lcpl));
}

/* The model of ckpt's configuration for rows of data, allocated for rows
 * rows, its variables (trainable or not) from vars by name. 0, or -1 with
 * the reason on stderr. */
static int rebuild(struct model *m, const struct backend *be, const struct ckpt_meta *meta,
		   const struct ckpt_var *vars, int n_vars, const struct dataset *data, int rows)
{
	struct config cfg;
	struct layer_spec spec[MODEL_MAX_LAYERS];
	int n_spec = 0, in[3];
	config_defaults(&cfg);
	if (config_parse_text(&cfg, meta->config ? meta->config : "", "the checkpoint") ||
	    model_input_shape(&cfg, data->path, data->shape, in) ||
	    model_specs(&cfg, spec, &n_spec) ||
	    model_plan_vocab(m, spec, n_spec, in, meta->classes, data->tokens ? meta->classes : 0,
			     cfg.seed))
		return fprintf(stderr, "grad_dump: %s\n", user_error_text()), -1;
	model_alloc(m, be, rows);
	for (int i = 0; i < m->reg.n; i++) {
		const struct param *p = &m->reg.p[i];
		const struct ckpt_var *v = NULL;
		for (int k = 0; k < n_vars && !v; k++)
			v = strcmp(vars[k].name, p->name) ? NULL : &vars[k];
		if (!v || v->ndim != p->ndim || memcmp(v->shape, p->shape, sizeof(v->shape))) {
			fprintf(stderr, "grad_dump: %s: missing or not of the model's shape\n",
				p->name);
			return -1;
		}
		be->copy_in(be, m->w + p->offset, v->data, p->size * sizeof(float));
	}
	return 0;
}

/* Rows ids of data into x (R, D) and y (R): 0, or -1 with why on stderr. */
static int load_rows(const struct dataset *data, const long *ids, int rows, float *x, int32_t *y)
{
	uint32_t *idx = xmalloc(sizeof(uint32_t) * (size_t)rows);
	char why[DATASET_WHY_LEN];
	int rc = 0;
	for (int i = 0; i < rows && !rc; i++) {
		if (ids[i] < 0 || ids[i] >= data->n) {
			fprintf(stderr, "grad_dump: row %ld: %s has %ld rows\n", ids[i], data->path,
				data->n);
			rc = -1;
		}
		idx[i] = (uint32_t)ids[i];
	}
	if (!rc && dataset_read_rows(data, idx, rows, x, y, why)) {
		fprintf(stderr, "grad_dump: %s\n", why);
		rc = -1;
	}
	free(idx);
	return rc;
}

/* The forward and backward of rows ids of data, written to out. */
static int dump(struct model *m, const struct dataset *data, const long *ids, int rows,
		long step, const char *out)
{
	const struct backend *be = m->be;
	size_t labels = (size_t)rows * (size_t)m->targets;
	float *x = xmalloc(sizeof(float) * (size_t)rows * data->dim);       /* (R, D) */
	int32_t *y = xmalloc(sizeof(int32_t) * labels);                     /* (R, L) */
	float *logits = xmalloc(sizeof(float) * labels * m->classes);       /* (R L, C) */
	float *g = xmalloc(sizeof(float) * m->reg.trainable);               /* (T) */
	float stats[2];                                                     /* loss sum, correct */
	int rc = load_rows(data, ids, rows, x, y);
	if (!rc) {
		model_set_batch(m, x, y, rows);
		model_set_position(m, step, 0);
		model_take_stats(m, stats); /* zeroed */
		model_forward(m, rows, 1, 1.0f / (float)labels);
		/* before the backward, which may reuse the logits' place */
		be->copy_out(be, logits, m->layer[m->n_layers - 1].y,
			     sizeof(float) * labels * m->classes);
		model_take_stats(m, stats);
		model_backward(m, rows, NULL, NULL);
		be->copy_out(be, g, m->g, sizeof(float) * m->reg.trainable);
		hid_t f = H5Fcreate(out, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
		H5_CHECK(f);
		hsize_t dims[SHAPE_MAX_RANK] = {(hsize_t)rows, (hsize_t)m->classes};
		double loss = (double)stats[0] / (double)labels;
		put(f, "rows", H5T_NATIVE_LONG, 1, dims, ids);
		dims[0] = (hsize_t)labels;
		put(f, "logits", H5T_NATIVE_FLOAT, 2, dims, logits);
		put(f, "loss", H5T_NATIVE_DOUBLE, 0, NULL, &loss);
		for (int i = 0; i < m->reg.n_trainable; i++) {
			const struct param *p = &m->reg.p[i];
			char path[PARAM_NAME_LEN + 8];
			for (int d = 0; d < p->ndim; d++)
				dims[d] = (hsize_t)p->shape[d];
			snprintf(path, sizeof(path), "grads/%s", p->name);
			put(f, path, H5T_NATIVE_FLOAT, p->ndim, dims, g + p->offset);
		}
		H5_CHECK(H5Fclose(f));
	}
	free(x);
	free(y);
	free(logits);
	free(g);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: grad_dump CKPT DATA OUT.h5 ROW...\n");
		return 1;
	}
	int rows = argc - 4, rc = 1;
	long *ids = xmalloc(sizeof(long) * (size_t)rows);
	for (int i = 0; i < rows; i++) {
		char *end;
		ids[i] = strtol(argv[4 + i], &end, 10);
		if (!*argv[4 + i] || *end) {
			fprintf(stderr, "grad_dump: row '%s' is not a number\n", argv[4 + i]);
			return 1;
		}
	}
	const struct backend *be = backend_cpu();
	struct ckpt_var *vars = NULL;
	struct ckpt_meta meta;
	struct dataset data;
	struct model m;
	int n_vars = 0;
	memset(&meta, 0, sizeof(meta));
	memset(&data, 0, sizeof(data));
	memset(&m, 0, sizeof(m));
	/* Streamed, as training reads it: rows of images or values, or windows
	 * of tokens of the checkpoint's --context. */
	struct config cfg;
	config_defaults(&cfg);
	if (ckpt_read_all(argv[1], &vars, &n_vars, &meta) ||
	    config_parse_text(&cfg, meta.config ? meta.config : "", "the checkpoint") ||
	    dataset_open_split(&data, argv[2], DATASET_TRAIN, cfg.context, 0, 1)) {
		fprintf(stderr, "grad_dump: %s\n", user_error_text());
	} else if (rebuild(&m, be, &meta, vars, n_vars, &data, rows) == 0) {
		rc = dump(&m, &data, ids, rows, meta.global_step, argv[3]) ? 1 : 0;
		model_free(&m);
	}
	ckpt_free_vars(vars, n_vars);
	ckpt_meta_free(&meta);
	dataset_free(&data);
	free(ids);
	return rc;
}
