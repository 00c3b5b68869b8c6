/* A data file as the reader child sees it: its layout checked through
 * HDF5 (x and y, their shapes, dtypes and classes) and, to load, its rows
 * read and checked (dataset_read_here), which dataset_load.c runs in the
 * child. */
#include "dataset.h"
#include "dataset_io.h"
#include "check.h"
#include "h5attr.h"
#include "resources.h"
#include "log.h"

#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* x's ranks: [N, D] or [N, H, W, C]. */
#define X_RANKS (1u << 2 | 1u << 4)
#define X_SHAPES "[N, D] or [N, H, W, C]"

/* One of a data file's datasets, open. */
struct h5ds {
	hid_t ds, space, type;
	int nd;          /* its rank, e.g. 2 */
	hsize_t dims[4]; /* e.g. {60000, 784}, {60000, 28, 28, 1} */
};

/* Values per row: the product of dims[1..nd). */
static double ds_row(const struct h5ds *h)
{
	double row = 1;
	for (int i = 1; i < h->nd; i++)
		row *= (double)h->dims[i];
	return row;
}

/* "[60000, 28, 28, 1]": dims as the file declares them (unsigned, and
 * perhaps larger than a long). */
static void ds_dims_text(const struct h5ds *h, char *buf, size_t len)
{
	size_t used = snprintf(buf, len, "[");
	for (int i = 0; i < h->nd && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%llu", i ? ", " : "",
				 (unsigned long long)h->dims[i]);
	if (used < len)
		snprintf(buf + used, len - used, "]");
}

/* 0, or -1 with a user error when the dataset name stores nothing (never
 * written), or, stored whole (contiguous or compact, not chunked), less
 * than its shape needs: forged layouts HDF5 1.10 crashes reading (found by
 * fuzz_dataset). Called just before reading it. */
static int ds_stored(const struct dataset *d, const struct h5ds *h, const char *name)
{
	hsize_t stored = H5Dget_storage_size(h->ds);
	hid_t dcpl = H5Dget_create_plist(h->ds);
	int whole = H5Pget_layout(dcpl) != H5D_CHUNKED;
	H5Pclose(dcpl);
	double need = (double)H5Tget_size(h->type) * (double)h->dims[0] * ds_row(h);
	if (h->dims[0] && (stored == 0 || (whole && (double)stored < need)))
		return user_error("%s: dataset '%s' stores %s (never written, or corrupt)", d->path,
				  name, stored ? "less than its shape needs" : "no data");
	return 0;
}

/* The byte offset of h's values when stored whole, unfiltered and of type
 * native (what pread can read as they are), else -1. */
static long long ds_direct(const struct h5ds *h, hid_t native)
{
	hid_t dcpl = H5Dget_create_plist(h->ds);
	int plain = H5Pget_layout(dcpl) == H5D_CONTIGUOUS && H5Pget_nfilters(dcpl) == 0 &&
		    H5Pget_external_count(dcpl) == 0;
	H5Pclose(dcpl);
	haddr_t at = H5Dget_offset(h->ds);
	if (!plain || at == HADDR_UNDEF || H5Tequal(h->type, native) <= 0 || at > (haddr_t)LLONG_MAX)
		return -1;
	return (long long)at;
}

static void ds_close(struct h5ds *h)
{
	H5Tclose(h->type);
	H5Sclose(h->space);
	H5Dclose(h->ds);
}

/* Opens dataset name of d's file, whose rank must be one of ranks (bit r
 * for rank r, r <= 4): 0, or -1 with a user error naming what it should
 * hold (e.g. "inputs", "[N, D]") and nothing left open. */
static int ds_open(const struct dataset *d, hid_t file, const char *name, unsigned ranks,
		   const char *what, const char *shape, struct h5ds *h)
{
	memset(h, 0, sizeof(*h));
	if (H5Lexists(file, name, H5P_DEFAULT) <= 0)
		return user_error("%s: no dataset '%s' (expected %s %s)", d->path, name, what, shape);
	H5O_info_t info;
	if (H5Oget_info_by_name(file, name, &info, H5P_DEFAULT) < 0)
		return user_error("%s: '%s' is a link to nothing (expected %s %s)", d->path, name,
				  what, shape);
	if (info.type != H5O_TYPE_DATASET)
		return user_error("%s: '%s' is a %s, not a dataset (expected %s %s)", d->path, name,
				  info.type == H5O_TYPE_GROUP ? "group" : "named datatype", what, shape);
	h->ds = H5Dopen2(file, name, H5P_DEFAULT);
	h->space = H5Dget_space(h->ds);
	h->type = H5Dget_type(h->ds);
	h->nd = H5Sget_simple_extent_ndims(h->space);
	if (h->nd >= 0 && h->nd <= 4 && (ranks >> h->nd & 1)) {
		H5Sget_simple_extent_dims(h->space, h->dims, NULL);
		return 0;
	}
	char want[32] = "";
	for (int r = 0; r <= 4; r++)
		if (ranks >> r & 1)
			snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%d",
				 want[0] ? " or " : "", r);
	user_error("%s: dataset '%s' has %d dimensions; expected %s (%s)", d->path, name, h->nd,
		   want, shape);
	ds_close(h);
	return -1;
}

/* d->y (count) = y[first, first + count), checked non-negative; *ymax
 * the largest (-1 for none). 0 or -1 (user error). */
static int read_y(struct dataset *d, const struct h5ds *h, long first, long count, long *ymax)
{
	hsize_t start = (hsize_t)first, n = (hsize_t)count;
	H5_CHECK(H5Sselect_hyperslab(h->space, H5S_SELECT_SET, &start, NULL, &n, NULL));
	hid_t mem = H5Screate_simple(1, &n, NULL);
	d->y = xmalloc(sizeof(int32_t) * (size_t)(count ? count : 1));
	herr_t r = count ? H5Dread(h->ds, H5T_NATIVE_INT32, mem, h->space, H5P_DEFAULT, d->y) : 0;
	H5Sclose(mem);
	if (r < 0)
		return user_error("%s: cannot read 'y' (corrupt file or values beyond int32)", d->path);
	for (long i = 0; i < count; i++) {
		if (d->y[i] < 0)
			return user_error("%s: y[%ld] = %d is negative; class ids start at 0", d->path,
					  first + i, d->y[i]);
		if (d->y[i] > *ymax)
			*ymax = d->y[i];
	}
	return 0;
}

/* *ymax = the largest of all of y, read a block at a time (bounded memory). */
static int scan_labels(struct dataset *d, const struct h5ds *h, long *ymax)
{
	const long block = 1 << 20;
	int rc = 0;
	for (long at = 0; at < d->n_total && !rc; at += block) {
		rc = read_y(d, h, at, d->n_total - at < block ? d->n_total - at : block, ymax);
		free(d->y);
		d->y = NULL;
	}
	return rc;
}

static int read_labels(struct dataset *d, hid_t file, long n_x)
{
	const char *p = d->path;
	struct h5ds h;
	if (ds_open(d, file, "y", 1u << 1, "class ids", "[N]", &h))
		return -1;
	int rc = -1;
	if ((long)h.dims[0] != n_x) {
		user_error("%s: 'y' has %llu rows but 'x' has %ld", p, (unsigned long long)h.dims[0], n_x);
		goto out;
	}
	if (H5Tget_class(h.type) != H5T_INTEGER) {
		user_error("%s: dataset 'y' is not integer; expected class ids", p);
		goto out;
	}
	if (ds_stored(d, &h, "y"))
		goto out;
	long ymax = -1; /* long: INT32_MAX + 1 must not wrap */
	if (d->streamed) {
		d->y_at = ds_direct(&h, H5T_NATIVE_INT32);
		/* Classes are the attribute's; without one, a pass over y, as
		 * where y is read through HDF5 (scan_x says why). */
		if ((d->y_at < 0 || H5Aexists(h.ds, "num_classes") <= 0) &&
		    scan_labels(d, &h, &ymax))
			goto out;
	} else if (read_y(d, &h, d->first, d->n, &ymax)) {
		goto out;
	}
	if (ymax + 1 > DATASET_MAX_CLASSES) {
		user_error("%s: labels go up to %ld; mtrain takes at most %d classes", p, ymax,
			   DATASET_MAX_CLASSES);
		goto out;
	}
	d->classes = (int)ymax + 1;
	if (H5Aexists(h.ds, "num_classes") > 0) {
		int64_t nc = 0;
		/* One integer: an array or a string is not a class count. */
		if (h5attr_get_i64(h.ds, "num_classes", &nc) || nc < 1) {
			user_error("%s: attribute y.num_classes is not one integer of at least 1", p);
			goto out;
		}
		if (ymax >= nc || nc > DATASET_MAX_CLASSES) {
			user_error("%s: y.num_classes = %lld, labels go up to %ld (at most %d classes)",
				   p, (long long)nc, ymax, DATASET_MAX_CLASSES);
			goto out;
		}
		d->classes = nc;
	}
	rc = 0;
out:
	ds_close(&h);
	return rc;
}

/* d's row shape from x's dims: {H, W, C} of [N, H, W, C], {1, 1, D} of
 * [N, D]. */
static void row_shape_of(struct dataset *d, const struct h5ds *h)
{
	d->shape[0] = h->nd == 4 ? (int)h->dims[1] : 1;
	d->shape[1] = h->nd == 4 ? (int)h->dims[2] : 1;
	d->shape[2] = (int)h->dims[h->nd - 1];
	d->dim = d->shape[0] * d->shape[1] * d->shape[2];
}

void dataset_cell_text(const struct dataset *d, long row, int j, char *buf, size_t len)
{
	int C = d->shape[2], W = d->shape[1];
	if (dataset_row_is_flat(d->shape))
		snprintf(buf, len, "x[%ld, %d]", row, j);
	else
		snprintf(buf, len, "x[%ld, %d, %d, %d]", row, j / C / W, j / C % W, j % C);
}

/* Bytes of x a scan reads at a time. */
#define SCAN_BYTES ((size_t)64 << 20)

/* Reads the rows held, [first, first + n), of x through HDF5 (here, in the
 * child), a block at a time: where x is chunked or compressed, the training
 * process reads them through HDF5 too, and a forged chunk index must crash
 * this child first, not it. */
static int scan_x(struct dataset *d, const struct h5ds *h, hid_t type)
{
	size_t row = (size_t)d->dim * H5Tget_size(type);
	long block = (long)(SCAN_BYTES / row) > 0 ? (long)(SCAN_BYTES / row) : 1;
	void *buf = xmalloc(row * (size_t)block);
	herr_t r = 0;
	long end = d->first + d->n;
	for (long at = d->first; at < end && r >= 0; at += block) {
		hsize_t start[4] = {(hsize_t)at}, count[4];
		memcpy(count, h->dims, sizeof(count));
		count[0] = (hsize_t)(end - at < block ? end - at : block);
		hid_t mem = H5Screate_simple(h->nd, count, NULL);
		r = H5Sselect_hyperslab(h->space, H5S_SELECT_SET, start, NULL, count, NULL);
		if (r >= 0)
			r = H5Dread(h->ds, type, mem, h->space, H5P_DEFAULT, buf);
		H5Sclose(mem);
	}
	free(buf);
	if (r < 0)
		return user_error("%s: cannot read 'x' (corrupt or truncated file)", d->path);
	return 0;
}

static int read_inputs(struct dataset *d, hid_t file, int part, int parts)
{
	const char *p = d->path;
	struct h5ds h;
	if (ds_open(d, file, "x", X_RANKS, "inputs", X_SHAPES, &h))
		return -1;
	int rc = -1;
	char dims[160];
	ds_dims_text(&h, dims, sizeof(dims));
	if (h.dims[0] < 1 || ds_row(&h) < 1) {
		user_error("%s: dataset 'x' is empty", p);
		goto out;
	}
	int is_u8 = H5Tget_class(h.type) == H5T_INTEGER && H5Tget_size(h.type) == 1 &&
		    H5Tget_sign(h.type) == H5T_SGN_NONE;
	int is_f32 = H5Tget_class(h.type) == H5T_FLOAT && H5Tget_size(h.type) == 4;
	if (!is_u8 && !is_f32) {
		H5T_class_t class = H5Tget_class(h.type);
		user_error("%s: dataset 'x' has %s of %zu bytes; expected float32 or uint8", p,
			   class == H5T_FLOAT ? "floats" : class == H5T_INTEGER ? "integers"
			   : class == H5T_COMPOUND ? "compound values" : "non-numeric values",
			   H5Tget_size(h.type));
		goto out;
	}
	/* Sizes are int and long here, and rows times values per row size_t. */
	if (ds_row(&h) > INT32_MAX || h.dims[0] > INT32_MAX ||
	    (double)h.dims[0] * ds_row(&h) > (double)(SIZE_MAX / sizeof(float))) {
		user_error("%s: dataset 'x' is %s; mtrain takes at most 2^31 - 1 rows "
			   "and features", p, dims);
		goto out;
	}
	char what[PATH_LEN + 64];
	snprintf(what, sizeof(what), "%s: dataset 'x'", p);
	if (!d->streamed && resources_check(what, (double)h.dims[0] * ds_row(&h) *
							  (is_u8 ? 1 : 4) / (double)parts))
		goto out;
	d->n_total = (long)h.dims[0];
	row_shape_of(d, &h);
	d->first = d->n_total * part / parts;
	d->n = d->n_total * (part + 1) / parts - d->first;
	d->x_bytes = is_u8 ? 1 : 4;
	if (d->streamed) { /* the layout only: rows are read when asked */
		d->x_at = ds_direct(&h, is_u8 ? H5T_NATIVE_UINT8 : H5T_NATIVE_FLOAT);
		rc = ds_stored(d, &h, "x");
		if (!rc && d->x_at < 0)
			rc = scan_x(d, &h, is_u8 ? H5T_NATIVE_UINT8 : H5T_NATIVE_FLOAT);
		goto out;
	}
	hsize_t start[4] = {(hsize_t)d->first}, count[4];
	memcpy(count, h.dims, sizeof(count));
	count[0] = (hsize_t)d->n;
	size_t cells = (size_t)d->n * (size_t)d->dim;
	herr_t r = 0;
	if (ds_stored(d, &h, "x"))
		goto out;
	if (d->n) {
		H5_CHECK(H5Sselect_hyperslab(h.space, H5S_SELECT_SET, start, NULL, count, NULL));
		hid_t mem = H5Screate_simple(h.nd, count, NULL);
		if (is_u8) {
			d->x8 = xmalloc(cells);
			r = H5Dread(h.ds, H5T_NATIVE_UINT8, mem, h.space, H5P_DEFAULT, d->x8);
		} else {
			d->xf = xmalloc(cells * sizeof(float));
			r = H5Dread(h.ds, H5T_NATIVE_FLOAT, mem, h.space, H5P_DEFAULT, d->xf);
		}
		H5Sclose(mem);
	}
	if (r < 0) {
		user_error("%s: cannot read 'x' (corrupt or truncated file)", p);
		goto out;
	}
	for (size_t i = 0; d->xf && i < cells; i++)
		if (!isfinite(d->xf[i])) {
			char cell[96];
			dataset_cell_text(d, d->first + (long)(i / d->dim), (int)(i % d->dim), cell,
					  sizeof(cell));
			user_error("%s: %s is %s; inputs must be finite", p, cell,
				   isnan(d->xf[i]) ? "NaN" : "infinite");
			goto out;
		}
	rc = 0;
out:
	ds_close(&h);
	return rc;
}

int dataset_read_here(struct dataset *d, const char *path, int part, int parts, int streamed,
		      int split)
{
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	d->streamed = streamed;
	struct stat st; /* the file checked, which dataset_open must then open */
	if (streamed && stat(path, &st) == 0)
		dataset_identity(&st, d->identity);
	snprintf(d->path, sizeof(d->path), "%s", path);
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* our own lines, not HDF5's stack */
	if (access(path, R_OK))
		return user_error("%s: cannot open data file: %s", path, strerror(errno));
	struct stat kind; /* a FIFO would block HDF5's open for ever */
	if (stat(path, &kind) == 0 && !S_ISREG(kind.st_mode))
		return user_error("%s: not a regular file", path);
	if (H5Fis_hdf5(path) <= 0)
		return user_error("%s: not an HDF5 file (convert IDX files with 'mtrain import')", path);
	hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (file < 0)
		return user_error("%s: cannot open as HDF5 (corrupt or truncated?)", path);
	d->split = split;
	int rc;
	if (H5Lexists(file, "tokens", H5P_DEFAULT) > 0 && H5Lexists(file, "x", H5P_DEFAULT) <= 0)
		rc = streamed ? dataset_tokens_layout(d, file, part, parts)
			      : user_error("%s: a file of tokens, which training streams; this "
					   "reads images or rows of x and y", path);
	else if (!(rc = read_inputs(d, file, part, parts)))
		rc = read_labels(d, file, d->n_total);
	H5Fclose(file);
	if (rc)
		dataset_free(d);
	return rc;
}
