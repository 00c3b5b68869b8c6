/* Reading safetensors and Keras files, writing Keras' (weights_file.h).
 * The JSON is jansson's, the zip libzip's, the HDF5 HDF5's (from memory
 * through its core driver: a .keras file's weights never touch the disk
 * apart from the zip). */
#include "weights_file.h"
#include "check.h"
#include "ckpt_file.h"
#include "log.h"
#include "paths.h"
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>
#include <zlib.h>

#define HEADER_MAX ((uint64_t)100 << 20) /* safetensors' own bound on its header */
#define TENSOR_CELLS_MAX ((size_t)1 << 34)
#define KERAS_WEIGHTS_MEMBER "model.weights.h5"

const char *const weights_kind_names[] = {"an mtrain checkpoint", "safetensors", "a .keras model",
					  "a Keras .weights.h5"};

/* A growing list of tensors. */
struct tensors {
	struct ckpt_var *v;
	int n, cap;
};

static struct ckpt_var *add_tensor(struct tensors *t)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 32;
		struct ckpt_var *grown = realloc(t->v, sizeof(*t->v) * (size_t)(t->cap + 1));
		ALLOC_CHECK(grown);
		t->v = grown;
	}
	struct ckpt_var *v = &t->v[t->n++];
	memset(v, 0, sizeof(*v));
	return v;
}

/* ---- safetensors ---- */

/* IEEE half and bfloat16 to float. */
static float half_to_float(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	float v = e == 0 ? ldexpf((float)m, -24)
		: e == 31 ? (m ? NAN : INFINITY)
			  : ldexpf((float)(m | 1024), e - 25);
	return h & 0x8000 ? -v : v;
}

static float bf16_to_float(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* One tensor of the header: name, {"dtype", "shape", "data_offsets"}; its
 * values read from fd at base + offsets. 0, or -1 with a user_error. */
static int read_safetensor(const char *path, int fd, off_t base, off_t data_len, const char *name,
			   json_t *desc, struct ckpt_var *v, long long span[2])
{
	const char *dtype = json_string_value(json_object_get(desc, "dtype"));
	json_t *shape = json_object_get(desc, "shape"), *off = json_object_get(desc, "data_offsets");
	size_t esize = !dtype ? 0
		       : !strcmp(dtype, "F32") ? 4
		       : !strcmp(dtype, "F64") ? 8
		       : !strcmp(dtype, "F16") || !strcmp(dtype, "BF16") ? 2 : 0;
	if (!dtype || !json_is_array(shape) || !json_is_array(off) || json_array_size(off) != 2)
		return user_error("%s: safetensors header: tensor '%s' lacks dtype, shape or "
				  "data_offsets", path, name);
	if (!esize)
		return user_error("%s: tensor '%s' is %s; mtrain reads F32, F16, BF16 and F64", path,
				  name, dtype);
	if (strlen(name) >= sizeof(v->name))
		return user_error("%s: tensor name '%.40s...' is longer than %zu bytes", path, name,
				  sizeof(v->name) - 1);
	snprintf(v->name, sizeof(v->name), "%s", name);
	size_t rank = json_array_size(shape);
	if (rank > SHAPE_MAX_RANK)
		return user_error("%s: tensor '%s' has rank %zu; mtrain's variables have at most %d",
				  path, name, rank, SHAPE_MAX_RANK);
	v->ndim = rank ? (int)rank : 1;
	v->shape[0] = 1;
	for (size_t i = 0; i < rank; i++) {
		json_t *d = json_array_get(shape, i);
		if (!json_is_integer(d) || json_integer_value(d) < 0 ||
		    json_integer_value(d) > (json_int_t)TENSOR_CELLS_MAX)
			return user_error("%s: tensor '%s' has a shape that is not sizes", path, name);
		v->shape[i] = (long)json_integer_value(d);
	}
	if (!json_is_integer(json_array_get(off, 0)) || !json_is_integer(json_array_get(off, 1)))
		return user_error("%s: tensor '%s': data_offsets are not two integers", path, name);
	json_int_t a = json_integer_value(json_array_get(off, 0)),
		   b = json_integer_value(json_array_get(off, 1));
	span[0] = a;
	span[1] = b;
	size_t cells = shape_fits(v->ndim, v->shape, TENSOR_CELLS_MAX) ? ckpt_var_cells(v) : 0;
	if (!shape_fits(v->ndim, v->shape, TENSOR_CELLS_MAX) || a < 0 || b < a || b > data_len ||
	    (size_t)(b - a) != cells * esize)
		return user_error("%s: tensor '%s': data_offsets [%lld, %lld] do not hold its shape "
				  "in the file's %lld bytes of data", path, name, (long long)a,
				  (long long)b, (long long)data_len);
	unsigned char *raw = xmalloc(cells * esize + 1);
	ssize_t got = pread(fd, raw, cells * esize, base + a);
	if (got != (ssize_t)(cells * esize)) {
		free(raw);
		return user_error("%s: cannot read tensor '%s'", path, name);
	}
	v->data = xmalloc(cells * sizeof(float) + 1);
	for (size_t i = 0; i < cells; i++) {
		uint16_t h;
		double d;
		switch (esize) {
		case 4: memcpy(&v->data[i], raw + 4 * i, 4); break;
		case 8: memcpy(&d, raw + 8 * i, 8); v->data[i] = (float)d; break;
		default:
			memcpy(&h, raw + 2 * i, 2);
			v->data[i] = dtype[0] == 'B' ? bf16_to_float(h) : half_to_float(h);
		}
	}
	free(raw);
	return 0;
}

static int span_cmp(const void *a, const void *b)
{
	const long long *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

static int read_safetensors(const char *path, int fd, off_t size, struct tensors *t)
{
	uint64_t hlen;
	if (pread(fd, &hlen, 8, 0) != 8 || hlen > HEADER_MAX || (off_t)hlen > size - 8)
		return user_error("%s: safetensors header length does not fit the file", path);
	char *text = xmalloc(hlen + 1);
	if (pread(fd, text, hlen, 8) != (ssize_t)hlen) {
		free(text);
		return user_error("%s: cannot read the safetensors header", path);
	}
	json_error_t err;
	json_t *root = json_loadb(text, hlen, JSON_REJECT_DUPLICATES, &err);
	free(text);
	if (!json_is_object(root)) {
		json_decref(root);
		return user_error("%s: safetensors header is not a JSON object (%s, character %d)", path,
				  err.text, err.position);
	}
	const char *name;
	json_t *desc;
	int rc = 0;
	long long(*spans)[2] = NULL;
	size_t n_spans = 0, cap = 0;
	json_object_foreach(root, name, desc) {
		if (!strcmp(name, "__metadata__"))
			continue;
		if (!json_is_object(desc)) {
			rc = user_error("%s: safetensors header: '%s' is not a tensor", path, name);
			break;
		}
		if (n_spans == cap) {
			cap = cap ? 2 * cap : 32;
			spans = realloc(spans, sizeof(*spans) * cap);
			ALLOC_CHECK(spans);
		}
		if ((rc = read_safetensor(path, fd, (off_t)(8 + hlen), size - 8 - (off_t)hlen, name,
					  desc, add_tensor(t), spans[n_spans++])))
			break;
	}
	json_decref(root);
	/* The tensors tile the data exactly, as safetensors requires: no
	 * overlap, no hole, nothing after. */
	if (!rc) {
		qsort(spans, n_spans, sizeof(*spans), span_cmp);
		long long end = 0;
		for (size_t i = 0; i < n_spans && !rc; i++) {
			if (spans[i][0] != end)
				rc = user_error("%s: tensors' data_offsets %s at byte %lld (safetensors' "
						"tensors tile the data exactly)", path,
						spans[i][0] < end ? "overlap" : "leave a hole", end);
			end = spans[i][1];
		}
		if (!rc && end != (long long)(size - 8 - (off_t)hlen))
			rc = user_error("%s: %lld bytes after the last tensor's data (safetensors' "
					"tensors tile the data exactly)", path,
					(long long)(size - 8 - (off_t)hlen) - end);
	}
	free(spans);
	return rc;
}

/* ---- Keras' HDF5 ---- */

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
	struct ckpt_var *v = add_tensor(w->t);
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
		v->shape[i] = dims[i] <= TENSOR_CELLS_MAX ? (long)dims[i] : -1;
	if (!w->rc && !shape_fits(v->ndim, v->shape, TENSOR_CELLS_MAX))
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

/* Opens path (or, with image, the HDF5 file in image[0..len)). */
static hid_t open_h5(const char *path, const void *image, size_t len)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	if (image) {
		H5Pset_fapl_core(fapl, 1 << 20, 0);
		H5Pset_file_image(fapl, (void *)image, len);
	}
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
	H5Pclose(fapl);
	return f;
}

/* Keras' layers' variables, or *is_keras 0 when the file has no "layers"
 * group (an mtrain checkpoint, or not a weights file). */
static int read_keras_h5(const char *path, hid_t f, struct tensors *t, int *is_keras)
{
	*is_keras = H5Lexists(f, "layers", H5P_DEFAULT) > 0;
	struct h5_walk w = {path, t, 0};
	if (*is_keras && H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, visit_keras, &w) < 0 && !w.rc)
		w.rc = user_error("%s: its groups cannot be read (damaged HDF5)", path);
	return w.rc;
}

/* ---- the .keras zip ---- */

/* zlib's CRC-32 of bytes[0..len), in pieces its uInt can count. */
static uint32_t crc_of(const void *bytes, size_t len)
{
	uLong crc = crc32(0, NULL, 0);
	for (size_t at = 0; at < len;) {
		uInt piece = len - at > (1u << 30) ? 1u << 30 : (uInt)(len - at);
		crc = crc32(crc, (const Bytef *)bytes + at, piece);
		at += piece;
	}
	return (uint32_t)crc;
}

static int read_keras_zip(const char *path, struct tensors *t)
{
	int zerr = 0;
	zip_t *z = zip_open(path, ZIP_RDONLY, &zerr);
	if (!z) {
		zip_error_t e;
		zip_error_init_with_code(&e, zerr);
		int rc = user_error("%s: not a readable zip (%s)", path, zip_error_strerror(&e));
		zip_error_fini(&e);
		return rc;
	}
	zip_stat_t st;
	int rc = 0;
	zip_file_t *member = NULL;
	void *image = NULL;
	if (zip_stat(z, KERAS_WEIGHTS_MEMBER, 0, &st) || !(st.valid & ZIP_STAT_SIZE))
		rc = user_error("%s: a zip without %s: not a .keras model", path, KERAS_WEIGHTS_MEMBER);
	else if (st.size > ((zip_uint64_t)1 << 40))
		rc = user_error("%s: %s says it is %llu bytes", path, KERAS_WEIGHTS_MEMBER,
				(unsigned long long)st.size);
	else if (!(member = zip_fopen(z, KERAS_WEIGHTS_MEMBER, 0)))
		rc = user_error("%s: cannot open its %s (%s)", path, KERAS_WEIGHTS_MEMBER,
				zip_strerror(z));
	if (!rc) {
		image = xmalloc(st.size + 1);
		if (zip_fread(member, image, st.size) != (zip_int64_t)st.size)
			rc = user_error("%s: cannot read its %s (%s)", path, KERAS_WEIGHTS_MEMBER,
					zip_file_strerror(member));
		/* The member's CRC-32, as Keras' zipfile checks it. */
		else if ((st.valid & ZIP_STAT_CRC) && crc_of(image, st.size) != st.crc)
			rc = user_error("%s: its %s fails its CRC-32 (damaged)", path,
					KERAS_WEIGHTS_MEMBER);
	}
	if (member)
		zip_fclose(member);
	zip_discard(z);
	hid_t f = rc ? -1 : open_h5(KERAS_WEIGHTS_MEMBER, image, st.size);
	int is_keras = 0;
	if (!rc && f < 0)
		rc = user_error("%s: its %s is not an HDF5 file", path, KERAS_WEIGHTS_MEMBER);
	else if (!rc && !(rc = read_keras_h5(path, f, t, &is_keras)) && !is_keras)
		rc = user_error("%s: its %s has no 'layers' group: not Keras' weights", path,
				KERAS_WEIGHTS_MEMBER);
	if (f >= 0)
		H5Fclose(f);
	free(image);
	return rc;
}

int weights_read_here(const char *path, enum weights_kind *kind, struct ckpt_var **vars, int *n)
{
	static const unsigned char hdf5_sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	struct tensors t = {0};
	*vars = NULL;
	*n = 0;
	unsigned char head[9] = {0};
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK); /* a FIFO must not block: refused below */
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		int rc = user_error("%s: cannot open: %s", path, fd < 0 ? strerror(errno)
									: "not a regular file");
		if (fd >= 0)
			close(fd);
		return rc;
	}
	ssize_t got = pread(fd, head, 9, 0);
	uint64_t hlen;
	memcpy(&hlen, head, 8);
	int rc = 0;
	if (got >= 4 && !memcmp(head, "PK\3\4", 4)) {
		*kind = WEIGHTS_KERAS;
		rc = read_keras_zip(path, &t);
	} else if (got >= 8 && !memcmp(head, hdf5_sig, 8)) {
		hid_t f = open_h5(path, NULL, 0);
		int is_keras = 0;
		if (f < 0)
			rc = user_error("%s: begins as HDF5 but HDF5 cannot open it", path);
		else if (H5Lexists(f, "model_weights", H5P_DEFAULT) > 0 ||
			 H5Aexists(f, "layer_names") > 0)
			rc = user_error("%s: a legacy Keras HDF5 file (Keras 2, tf.keras): load it in "
					"Keras 3 and save it as .keras or .weights.h5", path);
		else
			rc = read_keras_h5(path, f, &t, &is_keras);
		if (f >= 0)
			H5Fclose(f);
		*kind = is_keras ? WEIGHTS_KERAS_H5 : WEIGHTS_CKPT;
	} else if (got == 9 && head[8] == '{' && hlen <= HEADER_MAX && (off_t)hlen <= st.st_size - 8) {
		*kind = WEIGHTS_SAFETENSORS;
		rc = read_safetensors(path, fd, st.st_size, &t);
	} else {
		rc = user_error("%s: not an mtrain checkpoint, safetensors, .keras or Keras .weights.h5 "
				"file (by its first bytes)", path);
	}
	close(fd);
	if (rc) {
		ckpt_free_vars(t.v, t.n);
		return RC_CORRUPT;
	}
	*vars = t.v;
	*n = t.n;
	return 0;
}

/* ---- in a child process (sandbox.h) ---- */

#define SENT_PATH_MAX ((size_t)1 << 16)
#define SENT_VARS_MAX (1 << 20)

struct read_args {
	char *path; /* first, as sandbox.h asks */
	enum weights_kind kind;
	struct ckpt_var *vars;
	int n;
};

static void read_ask(void *arg, struct sandbox_pipe *p)
{
	struct read_args *a = arg;
	sandbox_move_str(p, &a->path, SENT_PATH_MAX);
	p->failed |= !p->sending && !a->path;
}

static int read_child(void *arg)
{
	struct read_args *a = arg;
	return weights_read_here(a->path, &a->kind, &a->vars, &a->n);
}

/* The kind, how many tensors, then each one's name, shape and values. */
static void read_move(void *arg, struct sandbox_pipe *p)
{
	struct read_args *a = arg;
	sandbox_move(p, &a->kind, sizeof(a->kind));
	sandbox_move(p, &a->n, sizeof(a->n));
	p->failed |= a->n < 0 || a->n > SENT_VARS_MAX || a->kind < WEIGHTS_CKPT ||
		     a->kind > WEIGHTS_KERAS_H5;
	if (!p->sending && !p->failed)
		a->vars = xcalloc((size_t)a->n + 1, sizeof(*a->vars));
	for (int i = 0; i < a->n && !p->failed; i++) {
		ckpt_var_move_head(p, &a->vars[i]);
		ckpt_var_move_data(p, &a->vars[i]);
	}
}

const struct sandbox_reader weights_sandbox_reader = {
	.name = "weights",
	.arg_size = sizeof(struct read_args),
	.ask = read_ask,
	.read = read_child,
	.move = read_move,
};

int weights_read(const char *path, enum weights_kind *kind, struct ckpt_var **vars, int *n)
{
	struct read_args a = {.path = (char *)path};
	int rc = sandbox_read(path, &weights_sandbox_reader, &a);
	if (rc) {
		ckpt_free_vars(a.vars, a.n);
		a.vars = NULL;
		a.n = 0;
	}
	*kind = a.kind;
	*vars = a.vars;
	*n = a.n;
	return rc;
}

/* ---- writing Keras' files ---- */

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
		hid_t g = vars_group(f, path, layers[i].name);
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

int weights_write_file(const char *out, const void *bytes, size_t len)
{
	char tmp[FILE_PATH_LEN];
	FILE *f = path_create_temp(out, tmp, sizeof(tmp));
	if (!f)
		return -1;
	fwrite(bytes, 1, len, f);
	return path_commit_temp(f, tmp, out);
}

/* Adds a stored member name holding bytes[0..len) (not copied: they must
 * live until zip_close). */
static int zip_put(zip_t *z, const char *name, const void *bytes, size_t len)
{
	zip_source_t *s = zip_source_buffer(z, bytes, len, 0);
	zip_int64_t i = s ? zip_file_add(z, name, s, ZIP_FL_ENC_UTF_8) : -1;
	if (i < 0) {
		zip_source_free(s);
		return -1;
	}
	return zip_set_file_compression(z, (zip_uint64_t)i, ZIP_CM_STORE, 0);
}

void *keras_zip_image(const char *metadata, const char *config, const void *h5, size_t h5_len,
		      size_t *len)
{
	zip_error_t err;
	zip_error_init(&err);
	zip_source_t *buf = zip_source_buffer_create(NULL, 0, 0, &err);
	zip_t *z = NULL;
	if (buf) {
		zip_source_keep(buf); /* it outlives the archive: the bytes are read from it */
		z = zip_open_from_source(buf, ZIP_TRUNCATE, &err);
	}
	int bad = !z || zip_put(z, "metadata.json", metadata, strlen(metadata)) ||
		  zip_put(z, "config.json", config, strlen(config)) ||
		  zip_put(z, KERAS_WEIGHTS_MEMBER, h5, h5_len);
	if (z && (bad || zip_close(z))) {
		zip_discard(z);
		bad = 1;
	}
	zip_stat_t st;
	void *image = NULL;
	if (!bad && zip_source_stat(buf, &st) == 0 && (st.valid & ZIP_STAT_SIZE) &&
	    zip_source_open(buf) == 0) {
		image = xmalloc(st.size + 1);
		if (zip_source_read(buf, image, st.size) != (zip_int64_t)st.size) {
			free(image);
			image = NULL;
		}
		zip_source_close(buf);
	}
	if (buf)
		zip_source_free(buf);
	zip_error_fini(&err);
	*len = image ? st.size : 0;
	return image;
}
