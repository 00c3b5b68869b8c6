/* Files of tokens (dataset.h): a language model's data. One HDF5 file holds
 * the training split ("tokens" [N]) and, optionally, the validation split
 * ("val_tokens" [M]), each stored whole in the narrowest unsigned type
 * that holds the vocabulary (uint8, uint16, else int32), with the
 * attributes vocab_size and tokenizer ("bytes": a token per byte). A row is
 * a window of T + 1 tokens: its inputs the first T, its labels the T after
 * each, read from the page cache as image rows are (dataset_bytes.c). The
 * importers that write them are tokens_import.c. */
#include "dataset.h"
#include "dataset_io.h"
#include "h5attr.h"
#include "check.h"
#include "log.h"
#include "rng.h"

#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Each epoch's shift of the training windows. */
#define RNG_STREAM_SHIFT (1ull << 62)

/* vocab_size at most this: the classes any data may have. */
#define TOKENS_MAX_VOCAB DATASET_MAX_CLASSES

/* The integer attribute name of the file, or -1 when it has none (or
 * not one integer: h5attr.h). */
static long long int_attr(hid_t file, const char *name)
{
	int64_t v;
	return h5attr_get_i64(file, name, &v) ? -1 : (long long)v;
}

/* The string attribute tokenizer into buf, "" when absent or unreadable. */
static void tokenizer_attr(hid_t file, char *buf, size_t len)
{
	char *s = h5attr_get_str(file, "tokenizer");
	snprintf(buf, len, "%s", s ? s : "");
	free(s);
}

/* Where a sentencepiece file's model lies ("tokenizer_model", uint8,
 * stored whole): d->model_at, d->model_len; -1 and 0 for other tokenizers.
 * 0, or -1 with a user_error. */
static int model_layout(struct dataset *d, hid_t file)
{
	d->model_at = -1;
	d->model_len = 0;
	if (strcmp(d->tokenizer, "sentencepiece"))
		return 0;
	hid_t ds = H5Lexists(file, "tokenizer_model", H5P_DEFAULT) > 0
			   ? H5Dopen2(file, "tokenizer_model", H5P_DEFAULT)
			   : -1;
	hid_t type = ds < 0 ? -1 : H5Dget_type(ds), space = ds < 0 ? -1 : H5Dget_space(ds);
	hid_t dcpl = ds < 0 ? -1 : H5Dget_create_plist(ds);
	hsize_t n = 0;
	int ok = ds >= 0 && H5Tequal(type, H5T_NATIVE_UINT8) > 0 &&
		 H5Sget_simple_extent_ndims(space) == 1 &&
		 H5Sget_simple_extent_dims(space, &n, NULL) == 1 && n > 0 && n < (1u << 30) &&
		 H5Pget_layout(dcpl) == H5D_CONTIGUOUS && H5Pget_nfilters(dcpl) == 0;
	haddr_t at = ok ? H5Dget_offset(ds) : HADDR_UNDEF;
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (space >= 0)
		H5Sclose(space);
	if (type >= 0)
		H5Tclose(type);
	if (ds >= 0)
		H5Dclose(ds);
	if (!ok || at == HADDR_UNDEF || at > (haddr_t)LLONG_MAX)
		return user_error("%s: tokenizer sentencepiece, but no 'tokenizer_model' (its "
				  "serialized model as uint8, stored whole)", d->path);
	d->model_at = (long long)at;
	d->model_len = (long)n;
	return 0;
}

int dataset_tokens_layout(struct dataset *d, int64_t file, int part, int parts)
{
	/* Evaluation reads val_tokens when the file has them; d->split then says
	 * which was read. */
	if (d->split == DATASET_EVAL && H5Lexists(file, "val_tokens", H5P_DEFAULT) <= 0)
		d->split = DATASET_TRAIN;
	const char *name = d->split == DATASET_EVAL ? "val_tokens" : "tokens";
	hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
	if (ds < 0)
		return user_error("%s: cannot open dataset '%s'", d->path, name);
	hid_t space = H5Dget_space(ds), type = H5Dget_type(ds);
	hsize_t n = 0;
	int rc = -1;
	static const struct {
		hid_t *native;
		int bytes;
	} kinds[3] = {{&H5T_NATIVE_UINT8_g, 1}, {&H5T_NATIVE_UINT16_g, 2}, {&H5T_NATIVE_INT32_g, 4}};
	int bytes = 0;
	for (int k = 0; k < 3 && type >= 0; k++)
		if (H5Tequal(type, *kinds[k].native) > 0)
			bytes = kinds[k].bytes;
	hid_t dcpl = H5Dget_create_plist(ds);
	int whole = H5Pget_layout(dcpl) == H5D_CONTIGUOUS && H5Pget_nfilters(dcpl) == 0 &&
		    H5Pget_external_count(dcpl) == 0;
	H5Pclose(dcpl);
	haddr_t at = H5Dget_offset(ds);
	long long vocab = int_attr(file, "vocab_size");
	if (H5Sget_simple_extent_ndims(space) != 1 || H5Sget_simple_extent_dims(space, &n, NULL) != 1)
		user_error("%s: '%s' must be one-dimensional [N]", d->path, name);
	else if (!bytes)
		user_error("%s: '%s' must hold uint8, uint16 or int32 token ids", d->path, name);
	else if (!whole || at == HADDR_UNDEF || at > (haddr_t)LLONG_MAX)
		user_error("%s: '%s' must be stored whole, uncompressed (h5repack -l CONTIG %s "
			   "OUT.h5)", d->path, name, d->path);
	else if (vocab < 0)
		user_error("%s: no attribute vocab_size (one integer: the token ids' range)",
			   d->path);
	else if (vocab < 2 || vocab > TOKENS_MAX_VOCAB || (bytes < 4 && vocab > 1ll << 8 * bytes))
		user_error("%s: attribute vocab_size %lld must be 2 to %d (and fit '%s''s type)",
			   d->path, vocab, TOKENS_MAX_VOCAB, name);
	else if (n > (hsize_t)LONG_MAX / 8)
		user_error("%s: '%s' holds %llu tokens: too many", d->path, name,
			   (unsigned long long)n);
	else
		rc = 0;
	if (!rc) {
		d->tokens = 1;
		d->n_total = d->n_tokens = (long)n;
		d->first = d->n_total * part / parts;
		d->n = d->n_total * (part + 1) / parts - d->first;
		d->dim = 1;
		d->shape[0] = d->shape[1] = d->shape[2] = 1;
		d->classes = (int)vocab;
		d->x_bytes = bytes;
		d->x_at = (long long)at;
		d->y_at = -1;
		tokenizer_attr(file, d->tokenizer, sizeof(d->tokenizer));
		d->text_bytes = int_attr(file, d->split == DATASET_EVAL ? "val_bytes" : "bytes");
		d->text_bytes = d->text_bytes > 0 ? d->text_bytes : 0;
		rc = model_layout(d, file);
	}
	H5Tclose(type);
	H5Sclose(space);
	H5Dclose(ds);
	return rc;
}

int dataset_set_window(struct dataset *d, int window, int part, int parts)
{
	const char *name = d->split == DATASET_EVAL ? "val_tokens" : "tokens";
	/* Training's windows leave room for the shift, evaluation's for the
	 * last target. */
	long room = d->split == DATASET_EVAL ? 1 : window;
	long windows = window > 0 && d->n_tokens >= room ? (d->n_tokens - room) / window : 0;
	if (window < 1 || windows < 1 || windows > INT32_MAX) {
		if (window < 1)
			user_error("%s: a file of tokens needs --context T, the tokens a row holds",
				   d->path);
		else if (windows > INT32_MAX) /* a window's id is 32 bits (the order's) */
			user_error("%s: '%s' makes %ld windows of --context %d; mtrain takes at most "
				   "%d: a longer context, or the file in parts", d->path, name,
				   windows, window, INT32_MAX);
		else
			user_error("%s: '%s' holds %ld tokens, too few for one window of --context "
				   "%d (%ld needed)", d->path, name, d->n_tokens, window,
				   room + window);
		dataset_free(d);
		return -1;
	}
	d->window = window;
	d->n_total = windows;
	d->first = windows * part / parts;
	d->n = windows * (part + 1) / parts - d->first;
	d->dim = window;
	d->shape[0] = d->shape[1] = 1;
	d->shape[2] = window;
	return 0;
}

void *dataset_tokenizer_model(const struct dataset *d, size_t *len, char *why)
{
	if (d->model_at < 0 || d->model_len <= 0) {
		snprintf(why, DATASET_WHY_LEN, "%s: no tokenizer model (tokenizer '%s')", d->path,
			 d->tokenizer);
		return NULL;
	}
	void *model = xmalloc((size_t)d->model_len);
	if (dataset_read_at(d, d->model_at, model, (size_t)d->model_len, "tokenizer_model", 0, 1,
			    why)) {
		free(model);
		return NULL;
	}
	*len = (size_t)d->model_len;
	return model;
}

long dataset_window_shift(uint64_t seed, long epoch, int window)
{
	struct rng r;
	rng_init(&r, seed, RNG_STREAM_SHIFT | (uint64_t)epoch);
	return (long)rng_below(&r, (uint64_t)window);
}

/* Token j of raw (bytes wide). */
static uint32_t token_at(const uint8_t *raw, int bytes, long j)
{
	if (bytes == 1)
		return raw[j];
	if (bytes == 2) {
		uint16_t v;
		memcpy(&v, raw + 2 * j, 2);
		return v;
	}
	int32_t v;
	memcpy(&v, raw + 4 * j, 4);
	return (uint32_t)v; /* a negative id is past any vocabulary */
}

int dataset_read_windows(const struct dataset *d, const uint32_t *idx, int rows, long shift,
			 float *x, int32_t *y, char *why)
{
	const char *name = d->split == DATASET_EVAL ? "val_tokens" : "tokens";
	int T = d->window;
	size_t len = (size_t)(T + 1) * (size_t)d->x_bytes;
	uint8_t *raw = xmalloc(len);
	int rc = dataset_unchanged(d, why);
	for (int i = 0; i < rows && !rc; i++) {
		long w = d->first + (long)idx[i], start = shift + w * T;
		rc = dataset_read_at(d, d->x_at + (long long)start * d->x_bytes, raw, len, name, start,
				     T + 1, why);
		for (int j = 0; j <= T && !rc; j++) {
			uint32_t id = token_at(raw, d->x_bytes, j);
			if (id >= (uint32_t)d->classes) {
				snprintf(why, DATASET_WHY_LEN, "%s: %s[%ld] = %lld is not below "
					 "vocab_size %d", d->path, name, start + j,
					 d->x_bytes == 4 ? (long long)(int32_t)id : (long long)id,
					 d->classes);
				rc = -1;
			} else if (j < T) {
				x[(size_t)i * T + j] = (float)id;
			}
			if (j > 0 && !rc)
				y[(size_t)i * T + j - 1] = (int32_t)id;
		}
	}
	free(raw);
	return rc || dataset_unchanged(d, why) ? -1 : 0;
}

/* Writes dataset name [n] of bytes-wide values (ids; bytes 1: uint8). 0
 * or -1. */
static int write_split(hid_t file, const char *name, const void *ids, long n, int bytes)
{
	hid_t type = bytes == 1 ? H5T_NATIVE_UINT8 : bytes == 2 ? H5T_NATIVE_UINT16 : H5T_NATIVE_INT32;
	hsize_t dims[1] = {(hsize_t)n};
	hid_t space = H5Screate_simple(1, dims, NULL);
	hid_t ds = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	H5Sclose(space);
	if (ds < 0)
		return -1;
	int rc = H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ids) < 0 ? -1 : 0;
	return H5Dclose(ds) < 0 ? -1 : rc;
}

/* The file's attributes vocab_size, tokenizer, bytes and val_bytes. 0 or
 * -1. */
static int write_attrs(hid_t file, int vocab, const struct tokens_meta *meta)
{
	static const char *const names[2] = {"bytes", "val_bytes"};
	int rc = h5attr_put_i64(file, "vocab_size", vocab) ||
		 h5attr_put_str(file, "tokenizer", meta->tokenizer);
	for (int i = 0; i < 2 && !rc && meta->bytes[i] > 0; i++)
		rc = h5attr_put_i64(file, names[i], meta->bytes[i]);
	return rc ? -1 : 0;
}

int dataset_write_tokens(const char *path, const void *train, long n_train, const void *val,
			 long n_val, int bytes, int vocab, const struct tokens_meta *meta)
{
	char tmp[FILE_PATH_LEN];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	errno = 0;
	hid_t file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	if (file < 0)
		return user_error("%s: cannot create data file: %s", path,
				  strerror(errno ? errno : EIO));
	int rc = write_split(file, "tokens", train, n_train, bytes);
	if (!rc && n_val > 0)
		rc = write_split(file, "val_tokens", val, n_val, bytes);
	if (!rc && meta->model)
		rc = write_split(file, "tokenizer_model", meta->model, (long)meta->model_len, 1);
	if (!rc)
		rc = write_attrs(file, vocab, meta);
	int err = errno;
	if (H5Fclose(file) < 0)
		rc = -1;
	if (!rc && rename(tmp, path))
		rc = -1, err = errno;
	if (rc) {
		unlink(tmp);
		return user_error("%s: cannot write data file: %s", path, strerror(err ? err : EIO));
	}
	return 0;
}
