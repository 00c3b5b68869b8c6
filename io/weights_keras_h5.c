/* Keras 3's weights file (HDF5: "layers/<layer>/vars/<i>"), read from a
 * file or from memory, and written in memory through HDF5's core driver
 * (a .keras file's weights never touch the disk apart from the zip). */
#include "weights_file.h"
#include "weights_io.h"
#include "check.h"
#include "log.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct h5_walk {
	const char *path;
	struct tensors *t;
	int rc;
};

/* "layers/conv2d/vars/0" -> "conv2d/vars/0"; a nested model's
 * "layers/block/layers/dense/vars/1" -> "block/dense/vars/1". NULL when
 * path is not a layer's variable (the optimizer's, the model's own). */
static const char *keras_var_name(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');
	if (strncmp(path, "layers/", 7) || !slash || slash - path < 5 ||
	    strncmp(slash - 5, "/vars", 5))
		return NULL;
	size_t k = 0;
	for (const char *p = path; *p && k + 1 < len;) {
		if (!strncmp(p, "layers/", 7) && (p == path || p[-1] == '/')) {
			p += 7;
			continue;
		}
		buf[k++] = *p++;
	}
	buf[k] = 0;
	return buf;
}

static herr_t visit_keras(hid_t root, const char *path, const H5L_info_t *info, void *arg)
{
	struct h5_walk *w = arg;
	char name[CKPT_NAME_LEN + 1];
	H5O_info_t oi;
	if (!keras_var_name(path, name, sizeof(name)) ||
	    H5Oget_info_by_name(root, path, &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_DATASET)
		return 0;
	if (strlen(name) >= CKPT_NAME_LEN) {
		w->rc = user_error("%s: variable name '%.40s...' is longer than %d bytes", w->path, name,
				   CKPT_NAME_LEN - 1);
		return 1;
	}
	hid_t ds = H5Dopen2(root, path, H5P_DEFAULT);
	hid_t space = ds < 0 ? -1 : H5Dget_space(ds), type = ds < 0 ? -1 : H5Dget_type(ds);
	hsize_t dims[H5S_MAX_RANK] = {0};
	int ndim = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
	H5T_class_t class = type < 0 ? H5T_NO_CLASS : H5Tget_class(type);
	struct ckpt_var *v = weights_add_tensor(w->t);
	snprintf(v->name, sizeof(v->name), "%s", name);
	v->ndim = ndim > 0 ? ndim : 1;
	v->shape[0] = 1;
	if (ndim < 0 || ndim > SHAPE_MAX_RANK || H5Sget_simple_extent_dims(space, dims, NULL) < 0)
		w->rc = user_error("%s: %s: its shape cannot be read or has more than %d dimensions",
				   w->path, path, SHAPE_MAX_RANK);
	else if (class != H5T_FLOAT) /* as safetensors' integer dtypes are */
		w->rc = user_error("%s: %s is not floating point; mtrain reads float16, float32 "
				   "and float64", w->path, path);
	for (int i = 0; !w->rc && i < ndim; i++)
		v->shape[i] = dims[i] <= WEIGHTS_CELLS_MAX ? (long)dims[i] : -1;
	if (!w->rc && !shape_fits(v->ndim, v->shape, WEIGHTS_CELLS_MAX))
		w->rc = user_error("%s: %s: its shape is too large", w->path, path);
	if (!w->rc) {
		v->data = xmalloc(ckpt_var_cells(v) * sizeof(float) + 1);
		if (H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v->data) < 0)
			w->rc = user_error("%s: %s: its values cannot be read", w->path, path);
	}
	if (type >= 0)
		H5Tclose(type);
	if (space >= 0)
		H5Sclose(space);
	if (ds >= 0)
		H5Dclose(ds);
	return w->rc ? 1 : 0;
}

/* HDF5's file image callbacks that lend it the caller's image instead of
 * copying it (as H5LT_FILE_IMAGE_DONT_COPY does): by default the property
 * list and then the core driver each take a copy, three in all. udata is
 * the image; every size HDF5 asks for is the image's, since a file open
 * read-only never grows (a realloc is refused). */
static void *image_lend(size_t size, H5FD_file_image_op_t op, void *udata)
{
	(void)size;
	(void)op;
	return udata;
}

static void *image_same(void *dest, const void *src, size_t size, H5FD_file_image_op_t op,
			void *udata)
{
	(void)src; /* the lent image itself */
	(void)size;
	(void)op;
	(void)udata;
	return dest;
}

static void *image_no_realloc(void *ptr, size_t size, H5FD_file_image_op_t op, void *udata)
{
	(void)ptr;
	(void)size;
	(void)op;
	(void)udata;
	return NULL;
}

static herr_t image_keep(void *ptr, H5FD_file_image_op_t op, void *udata)
{
	(void)ptr;
	(void)op;
	(void)udata;
	return 0;
}

static void *udata_same(void *udata) { return udata; }

static herr_t udata_keep(void *udata)
{
	(void)udata;
	return 0;
}

hid_t weights_open_h5(const char *path, const void *image, size_t len)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	if (image) {
		H5FD_file_image_callbacks_t lend = {image_lend, image_same, image_no_realloc,
						    image_keep, udata_same, udata_keep,
						    (void *)image};
		H5Pset_fapl_core(fapl, 1 << 20, 0);
		/* The callbacks first: HDF5 refuses them once an image is set. */
		H5Pset_file_image_callbacks(fapl, &lend);
		H5Pset_file_image(fapl, (void *)image, len);
	}
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
	H5Pclose(fapl);
	return f;
}

int weights_read_keras_h5(const char *path, hid_t f, struct tensors *t, int *is_keras)
{
	*is_keras = H5Lexists(f, "layers", H5P_DEFAULT) > 0;
	struct h5_walk w = {path, t, 0};
	if (*is_keras && H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, visit_keras, &w) < 0 && !w.rc)
		w.rc = user_error("%s: its groups cannot be read (damaged HDF5)", path);
	return w.rc;
}

/* A variable-length UTF-8 string attribute, as h5py writes Keras'. */
static int put_vlen_str(hid_t obj, const char *key, const char *value)
{
	hid_t type = H5Tcopy(H5T_C_S1), space = H5Screate(H5S_SCALAR);
	H5Tset_size(type, H5T_VARIABLE);
	H5Tset_cset(type, H5T_CSET_UTF8);
	hid_t a = H5Acreate2(obj, key, type, space, H5P_DEFAULT, H5P_DEFAULT);
	int rc = a < 0 || H5Awrite(a, type, &value) < 0 ? -1 : 0;
	if (a >= 0)
		H5Aclose(a);
	H5Sclose(space);
	H5Tclose(type);
	return rc;
}

/* Group path/vars with its name attribute, as Keras' store makes one. */
static hid_t vars_group(hid_t parent, const char *path, const char *name)
{
	hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
	H5Pset_create_intermediate_group(lcpl, 1);
	hid_t g = H5Gcreate2(parent, path, lcpl, H5P_DEFAULT, H5P_DEFAULT);
	H5Pclose(lcpl);
	if (g >= 0 && put_vlen_str(g, "name", name)) {
		H5Gclose(g);
		g = -1;
	}
	return g;
}

static int put_var(hid_t g, int i, const struct ckpt_var *v)
{
	hsize_t dims[SHAPE_MAX_RANK];
	for (int d = 0; d < v->ndim; d++)
		dims[d] = (hsize_t)v->shape[d];
	char key[16];
	snprintf(key, sizeof(key), "%d", i);
	hid_t space = H5Screate_simple(v->ndim, dims, NULL);
	hid_t ds = H5Dcreate2(g, key, H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	int rc = ds < 0 || H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v->data) < 0;
	if (ds >= 0)
		H5Dclose(ds);
	H5Sclose(space);
	return rc ? -1 : 0;
}

void *keras_h5_image(const struct keras_layer_vars *layers, int n, const char *model, size_t *len)
{
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	H5Pset_fapl_core(fapl, 1 << 20, 0); /* in memory only */
	char name[64];
	snprintf(name, sizeof(name), "mtrain-keras-%d-%p.h5", (int)getpid(), (void *)layers);
	hid_t f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	H5Pclose(fapl);
	int rc = f < 0;
	for (int i = 0; !rc && i < n; i++) {
		char path[CKPT_NAME_LEN + 32];
		snprintf(path, sizeof(path), "layers/%s/vars", layers[i].name);
		hid_t g = vars_group(f, path, layers[i].label ? layers[i].label : layers[i].name);
		rc = g < 0;
		for (int k = 0; !rc && k < layers[i].n; k++)
			rc = put_var(g, k, layers[i].var[k]) != 0;
		if (g >= 0)
			H5Gclose(g);
	}
	hid_t g = rc ? -1 : vars_group(f, "vars", model);
	rc = rc || g < 0;
	if (g >= 0)
		H5Gclose(g);
	void *image = NULL;
	ssize_t size = rc || H5Fflush(f, H5F_SCOPE_GLOBAL) < 0 ? -1 : H5Fget_file_image(f, NULL, 0);
	if (size > 0) {
		image = xmalloc((size_t)size);
		if (H5Fget_file_image(f, image, (size_t)size) != size) {
			free(image);
			image = NULL;
		}
	}
	if (f >= 0)
		H5Fclose(f);
	*len = image ? (size_t)size : 0;
	return image;
}
