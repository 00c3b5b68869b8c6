/* Streamed data files of dataset.h: rows read from the file when asked
 * (where x and y are stored whole and uncompressed: by dataset_bytes.c,
 * copied from a mapping of the file, or with pread from one larger than
 * DATASET_MAP_MAX; through HDF5 otherwise), each checked as it is read,
 * the file checked unchanged. */
#include "dataset.h"
#include "dataset_io.h"
#include "check.h"
#include "hash.h"
#include "log.h"
#include "order.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* HDF5's cache of decompressed chunks for x read through HDF5: rows come in
 * a random order, so it holds many chunks (the default is 1 MiB). */
#define CHUNK_CACHE_BYTES ((size_t)64 << 20)
#define CHUNK_CACHE_SLOTS 12421 /* a prime, about 100 per MiB */

/* Where x or y is read through HDF5 (chunked, compressed, or of another
 * type than pread can take as it is): the file and both datasets, opened
 * here as well. */
static int open_hdf5(struct dataset *d)
{
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	hbool_t safe = 0;
	if (H5is_library_threadsafe(&safe) < 0 || !safe)
		return user_error("%s: x or y is chunked or compressed, which the reader thread "
				  "reads through HDF5, and this HDF5 is not thread-safe; store them "
				  "whole (h5repack -l CONTIG %s OUT.h5)", d->path, d->path);
	hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
	H5_CHECK(H5Pset_chunk_cache(dapl, CHUNK_CACHE_SLOTS, CHUNK_CACHE_BYTES, 1.0));
	hid_t f = H5Fopen(d->path, H5F_ACC_RDONLY, H5P_DEFAULT);
	d->h5[H5_FILE] = f;
	d->h5[H5_X] = f < 0 ? -1 : H5Dopen2(f, "x", dapl);
	d->h5[H5_Y] = f < 0 ? -1 : H5Dopen2(f, "y", H5P_DEFAULT);
	H5Pclose(dapl);
	if (d->h5[H5_X] < 0 || d->h5[H5_Y] < 0)
		return user_error("%s: cannot open as HDF5 (it changed since it was checked?)",
				  d->path);
	return 0;
}

/* Where row (of the file) of x begins, x stored whole. */
static long long x_offset(const struct dataset *d, long row)
{
	return d->x_at + (long long)row * d->dim * d->x_bytes;
}

/* Rows in a random order miss the cache (and the TLB) each: the rows this
 * many ahead are asked for while one is copied. */
#define PREFETCH_ROWS 2

static void prefetch(const uint8_t *p, size_t len)
{
	for (size_t at = 0; at < len; at += 64)
		__builtin_prefetch(p + at);
	__builtin_prefetch(p + len - 1);
}

/* Values of rows [row, row + count) of dataset ds (rank nd dims) through
 * HDF5, as type, into buf. */
static int read_hdf5(const struct dataset *d, hid_t ds, hid_t type, long row, long count,
		     void *buf, const char *name, char *why)
{
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* per thread: the reader's too */
	hid_t space = H5Dget_space(ds);
	int nd = H5Sget_simple_extent_ndims(space);
	hsize_t dims[4] = {0}, start[4] = {(hsize_t)row};
	herr_t r = -1;
	if (nd >= 1 && nd <= 4 && H5Sget_simple_extent_dims(space, dims, NULL) == nd &&
	    (hsize_t)(row + count) <= dims[0]) {
		dims[0] = (hsize_t)count;
		hid_t mem = H5Screate_simple(nd, dims, NULL);
		if (H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, dims, NULL) >= 0)
			r = H5Dread(ds, type, mem, space, H5P_DEFAULT, buf);
		H5Sclose(mem);
	}
	H5Sclose(space);
	if (r < 0)
		snprintf(why, DATASET_WHY_LEN, "%s: cannot read rows %ld to %ld of '%s' (the file "
			 "is corrupt, or changed during the run)", d->path, row, row + count - 1, name);
	return r < 0 ? -1 : 0;
}

/* The labels of the rows held, in memory (d->y) when they take at most
 * DATASET_LABEL_CACHE bytes: a row's read is then one pread, not two. They
 * are checked as each row is read, as ever. */
static int cache_labels(struct dataset *d)
{
	if ((double)d->n * sizeof(int32_t) > DATASET_LABEL_CACHE || d->n == 0)
		return 0;
	int32_t *y = xmalloc(sizeof(int32_t) * (size_t)d->n);
	char why[DATASET_WHY_LEN];
	int rc = d->y_at >= 0 ? dataset_read_at(d, d->y_at + (long long)d->first * (long long)sizeof(int32_t), y,
				       sizeof(int32_t) * (size_t)d->n, "y", d->first, d->n, why)
			      : read_hdf5(d, d->h5[H5_Y], H5T_NATIVE_INT32, d->first, d->n, y, "y", why);
	if (rc) {
		free(y);
		user_error("%s", why);
		dataset_free(d);
		return -1;
	}
	d->y = y;
	return 0;
}

/* Whether st is not the file the child checked (d->identity): then a user
 * error, and d freed. */
static int not_checked(struct dataset *d, const struct stat *st)
{
	long long id[4];
	dataset_identity(st, id);
	if (!memcmp(id, d->identity, sizeof(id)))
		return 0;
	user_error("%s: the file changed while it was being opened; start again once nothing "
		   "writes it", d->path);
	dataset_free(d);
	return -1;
}

int dataset_open_split(struct dataset *d, const char *path, int split, int window, int part,
		       int parts)
{
	if (dataset_read_file(d, path, part, parts, 1, split))
		return -1;
	/* No access-time update per read where the owner may say so. */
	d->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
	if (d->fd < 0 && errno == EPERM)
		d->fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (d->fd < 0 || fstat(d->fd, &st)) {
		user_error("%s: cannot open data file: %s", path, strerror(errno));
		dataset_free(d);
		return -1;
	}
	if (not_checked(d, &st))
		return -1;
	double cells = (double)d->n_total * d->dim;
	if (d->tokens) { /* stored whole (the child checked), read as windows */
		if (dataset_within(d, d->split == DATASET_EVAL ? "val_tokens" : "tokens", d->x_at,
			   cells * d->x_bytes) ||
		    dataset_within(d, "tokenizer_model", d->model_at, (double)d->model_len)) {
			dataset_free(d);
			return -1;
		}
		dataset_map_file(d);
		return dataset_set_window(d, window, part, parts);
	}
	if (dataset_within(d, "x", d->x_at, cells * d->x_bytes) ||
	    dataset_within(d, "y", d->y_at, (double)d->n_total * sizeof(int32_t)) ||
	    ((d->x_at < 0 || d->y_at < 0) && open_hdf5(d))) {
		dataset_free(d);
		return -1;
	}
	dataset_map_file(d);
	if (cache_labels(d))
		return -1;
	/* HDF5 opened it by name: the same file still. */
	if (d->x_at < 0 || d->y_at < 0) {
		if (stat(path, &st))
			memset(&st, 0, sizeof(st)); /* gone: not the file checked */
		if (not_checked(d, &st))
			return -1;
	}
	return 0;
}

int dataset_open(struct dataset *d, const char *path, int part, int parts)
{
	return dataset_open_split(d, path, DATASET_TRAIN, 0, part, parts);
}

/* x (n) = raw (n) scaled (dataset_scale_u8), where raw is x's last n bytes:
 * a block at a time through a copy, so that no block's input and output
 * overlap. */
static void scale_bytes(const uint8_t *raw, size_t n, float *x)
{
	enum { BLOCK = 4096 };
	uint8_t copy[BLOCK];
	for (size_t at = 0; at < n; at += BLOCK) {
		size_t len = n - at < BLOCK ? n - at : BLOCK;
		memcpy(copy, raw + at, len);
		dataset_scale_u8(copy, len, x + at);
	}
}

/* Rows [row, row + count) into x (count, D) and y (count): uint8 values are
 * read into the last quarter of x's bytes and scaled forward in place;
 * every value and label is checked. */
static int read_block(const struct dataset *d, long row, long count, float *x, int32_t *y,
		      char *why)
{
	size_t cells = (size_t)count * (size_t)d->dim;
	uint8_t *raw = d->x_bytes == 1 ? (uint8_t *)x + 3 * cells : (uint8_t *)x;
	size_t len = cells * (size_t)d->x_bytes;
	long long x_at = x_offset(d, row);
	int direct = d->map && d->x_bytes == 1; /* scaled from the page cache */
	int rc = direct ? dataset_map_copy(d, x_at, x, len, 1, "x", row, count, why)
		: d->x_at >= 0
		? dataset_read_at(d, x_at, raw, len, "x", row, count, why)
		: read_hdf5(d, d->h5[H5_X], d->x_bytes == 1 ? H5T_NATIVE_UINT8 : H5T_NATIVE_FLOAT,
			    row, count, raw, "x", why);
	if (rc)
		return -1;
	if (d->y) /* cache_labels' */
		memcpy(y, d->y + (row - d->first), (size_t)count * sizeof(int32_t));
	else
		rc = d->y_at >= 0
			? dataset_read_at(d, d->y_at + (long long)row * (long long)sizeof(int32_t), y,
				  (size_t)count * sizeof(int32_t), "y", row, count, why)
			: read_hdf5(d, d->h5[H5_Y], H5T_NATIVE_INT32, row, count, y, "y", why);
	if (rc)
		return -1;
	if (d->x_bytes == 1) {
		if (!direct)
			scale_bytes(raw, cells, x);
	} else {
		for (size_t j = 0; j < cells; j++)
			if (!isfinite(x[j])) {
				char cell[96];
				dataset_cell_text(d, row + (long)(j / (size_t)d->dim),
						  (int)(j % (size_t)d->dim), cell, sizeof(cell));
				snprintf(why, DATASET_WHY_LEN, "%s: %s is %s; inputs must be finite",
					 d->path, cell, isnan(x[j]) ? "NaN" : "infinite");
				return -1;
			}
	}
	for (long i = 0; i < count; i++)
		if (y[i] < 0 || y[i] >= d->classes) {
			snprintf(why, DATASET_WHY_LEN, "%s: y[%ld] = %d is not a class id (the model "
				 "has %d classes, 0 to %d)", d->path, row + i, y[i], d->classes,
				 d->classes - 1);
			return -1;
		}
	return 0;
}

int dataset_read_rows(const struct dataset *d, const uint32_t *idx, int rows, float *x,
		      int32_t *y, char *why)
{
	if (!d->streamed) {
		dataset_gather(d, idx, rows, x, y);
		return 0;
	}
	if (d->tokens)
		return dataset_read_windows(d, idx, rows, 0, x, y, why);
	if (dataset_unchanged(d, why))
		return -1;
	for (int i = 0; i < rows; i++) {
		if (d->map && i + PREFETCH_ROWS < rows)
			prefetch(d->map + x_offset(d, d->first + (long)idx[i + PREFETCH_ROWS]),
				 (size_t)d->dim * (size_t)d->x_bytes);
		if (read_block(d, d->first + (long)idx[i], 1, x + (size_t)i * (size_t)d->dim, y + i,
			       why))
			return -1;
	}
	return dataset_unchanged(d, why); /* and was so all along: not changed under the reads */
}

int dataset_read_range(const struct dataset *d, long begin, int rows, float *x, int32_t *y,
		       char *why)
{
	if (!d->streamed) {
		dataset_rows(d, begin, rows, x, y);
		return 0;
	}
	if (d->tokens) {
		uint32_t *idx = xmalloc(sizeof(uint32_t) * (size_t)(rows > 0 ? rows : 1));
		for (int i = 0; i < rows; i++)
			idx[i] = (uint32_t)(begin + i);
		int rc = dataset_read_windows(d, idx, rows, 0, x, y, why);
		free(idx);
		return rc;
	}
	return dataset_unchanged(d, why) || read_block(d, d->first + begin, rows, x, y, why) ||
	       dataset_unchanged(d, why) ? -1 : 0;
}

long dataset_sample_row(uint64_t seed, long i, long n)
{
	return (long)order_row(seed, -1, (uint64_t)i, (uint64_t)n);
}

#define DIGEST_BYTES ((size_t)16 << 20) /* of rows a full digest reads at a time */

int dataset_digest(const struct dataset *d, uint64_t seed, long count, uint64_t *digest,
		   char *why)
{
	uint64_t h = FNV1A64_INIT;
	long long layout[7] = {d->n, d->dim, d->shape[0], d->shape[1], d->x_bytes, d->classes,
			       d->identity[ID_SIZE]};
	h = fnv1a64(h, layout, sizeof(layout));
	long fit = (long)(DIGEST_BYTES / (sizeof(float) * (size_t)d->dim));
	long block = count < 0 ? (fit > 1 ? fit : 1) : 1;
	float *x = xmalloc(sizeof(float) * (size_t)block * (size_t)d->dim);
	int32_t *y = xmalloc(sizeof(int32_t) * (size_t)block * (size_t)dataset_labels(d));
	long n = count < 0 || count > d->n ? d->n : count;
	int rc = 0;
	for (long i = 0; i < n && !rc; i += block) {
		int rows = (int)(n - i < block ? n - i : block);
		if (count < 0) {
			rc = dataset_read_range(d, i, rows, x, y, why);
		} else {
			uint32_t id = (uint32_t)dataset_sample_row(seed, i, d->n);
			rc = dataset_read_rows(d, &id, 1, x, y, why);
		}
		h = fnv1a64(h, x, sizeof(float) * (size_t)rows * (size_t)d->dim);
		h = fnv1a64(h, y, sizeof(int32_t) * (size_t)rows * (size_t)dataset_labels(d));
	}
	free(x);
	free(y);
	*digest = h;
	return rc;
}
