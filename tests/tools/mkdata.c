/* Test fixtures: writes small HDF5 data files in mtrain's layout, learnable
 * synthetic ones, slices of real ones, and deliberately broken ones.
 *
 *   mkdata synth OUT N D C SEED [u8]   N rows, D features, C classes
 *   mkdata slice IN OUT FIRST COUNT    rows [FIRST, FIRST+COUNT) of IN
 *   mkdata reshape IN OUT H W C        IN's rows as images: x [N, H, W, C]
 *   mkdata overflow IN OUT ROW         IN with row ROW's inputs at 3e38 (finite,
 *                                      but its logits overflow)
 *   mkdata bad OUT KIND                KIND: nan neglabel x1d x3d int16 ylen noy,
 *                                      ncarray (y.num_classes an array of 64),
 *                                      wide (x declared [2, 2^31 + 2], not stored),
 *                                      vast (x declared [1e5, 1e6], not stored),
 *                                      xgroup, xlink (dangling), xcompound
 *   mkdata counting OUT N VAL [VOCAB]  a file of tokens 0..N-1 (val_tokens
 *                                      0..VAL-1), int32, vocab_size VOCAB
 *                                      (default: the most of N and VAL)
 *   mkdata badckpt IN OUT KIND         a copy of checkpoint IN with one defect
 *                                      in dense/kernel (rank5 f64 dup nan; huge:
 *                                      declared [2^31, 2^31], not stored; holes:
 *                                      chunks never written) or its
 *                                      root (ATTR=VALUE: an int64 attribute, as a
 *                                      byte edit would: its digest then fails;
 *                                      forge:ATTR=VALUE: rewritten whole, digests
 *                                      and all, as a valid file of another run),
 *                                      be (the kernel as big-endian float32),
 *                                      moved (the kernel at another path),
 *                                      stepdset (the global_step dataset + 1),
 *                                      dtypebyte (one byte of the kernel's
 *                                      datatype message flipped on disk),
 *                                      chunkindex (the kernel's chunk address
 *                                      zeroed where the file indexes it),
 *                                      or written as h5py would (vlconfig: the
 *                                      config attribute a variable-length string;
 *                                      strarray: format an array of 4 strings)
 */
#include "ckpt.h"
#include "dataset.h"
#include "log.h"
#include "rng.h"

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Class c's inputs scatter around a random centre: learnable, not trivial. */
static int synth(const char *out, long n, int d, int c, uint64_t seed, int u8)
{
	struct rng r;
	rng_init(&r, seed, 7);
	float *centre = malloc(sizeof(float) * (size_t)c * d);
	float *x = malloc(sizeof(float) * (size_t)n * d);
	uint8_t *x8 = malloc((size_t)n * d);
	int32_t *y = malloc(sizeof(int32_t) * (size_t)n);
	for (long i = 0; i < (long)c * d; i++)
		centre[i] = 2.0f * rng_uniform(&r) - 1.0f;
	for (long i = 0; i < n; i++) {
		y[i] = (int32_t)rng_below(&r, (uint64_t)c);
		for (int j = 0; j < d; j++) {
			float v = centre[(size_t)y[i] * d + j] + 1.2f * (rng_uniform(&r) - 0.5f);
			x[(size_t)i * d + j] = v;
			float s = (v + 2.0f) * 63.0f;
			x8[(size_t)i * d + j] = (uint8_t)(s < 0 ? 0 : s > 255 ? 255 : s);
		}
	}
	const int row[3] = {1, 1, d};
	int rc = dataset_write(out, u8 ? x8 : NULL, u8 ? NULL : x, y, n, row, c);
	free(centre);
	free(x);
	free(x8);
	free(y);
	return rc;
}

static int slice(const char *in, const char *out, long first, long count)
{
	struct dataset d;
	if (dataset_load(&d, in, 0, 1))
		return -1;
	if (first < 0 || count < 1 || first + count > d.n) {
		fprintf(stderr, "mkdata: rows [%ld, %ld) outside %s (%ld rows)\n", first,
			first + count, in, d.n);
		return -1;
	}
	int rc = dataset_write(out, d.x8 ? d.x8 + (size_t)first * d.dim : NULL,
			       d.xf ? d.xf + (size_t)first * d.dim : NULL, d.y + first, count,
			       d.shape, d.classes);
	dataset_free(&d);
	return rc;
}

static int reshape(const char *in, const char *out, const int row[3])
{
	struct dataset d;
	if (dataset_load(&d, in, 0, 1))
		return -1;
	if ((long)row[0] * row[1] * row[2] != d.dim) {
		fprintf(stderr, "mkdata: %d,%d,%d is not the %d values of %s's rows\n", row[0],
			row[1], row[2], d.dim, in);
		dataset_free(&d);
		return -1;
	}
	int rc = dataset_write(out, d.x8, d.xf, d.y, d.n, row, d.classes);
	dataset_free(&d);
	return rc;
}

static int overflow(const char *in, const char *out, long row)
{
	struct dataset d;
	if (dataset_load(&d, in, 0, 1) || !d.xf || row < 0 || row >= d.n)
		return fprintf(stderr, "mkdata: %s: needs float32 x with row %ld\n", in, row), -1;
	for (int j = 0; j < d.dim; j++)
		d.xf[(size_t)row * d.dim + j] = 3e38f;
	int rc = dataset_write(out, NULL, d.xf, d.y, d.n, d.shape, d.classes);
	dataset_free(&d);
	return rc;
}

static void raw_dataset(hid_t file, const char *name, hid_t type, int nd,
			const hsize_t *dims, const void *data)
{
	hid_t space = H5Screate_simple(nd, dims, NULL);
	hid_t ds = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
	H5Dclose(ds);
	H5Sclose(space);
}

/* A chunked float dataset of shape dims (2-D) at path whose chunks are
 * never written: it declares far more than the file holds. Its "name"
 * attribute is name. */
static void unwritten(hid_t file, const char *path, const char *name, hid_t type,
		      const hsize_t *dims)
{
	hid_t space = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
	hsize_t chunk[2] = {1, dims[1] < 1024 ? dims[1] : 1024};
	H5Pset_chunk(dcpl, 2, chunk);
	hid_t ds = H5Dcreate2(file, path, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	hid_t str = H5Tcopy(H5T_C_S1);
	H5Tset_size(str, strlen(name) + 1);
	hid_t scalar = H5Screate(H5S_SCALAR);
	hid_t a = H5Acreate2(ds, "name", str, scalar, H5P_DEFAULT, H5P_DEFAULT);
	H5Awrite(a, str, name);
	H5Aclose(a);
	H5Sclose(scalar);
	H5Tclose(str);
	H5Dclose(ds);
	H5Pclose(dcpl);
	H5Sclose(space);
}

/* 8 rows of 4 features with one defect. */
static int bad(const char *out, const char *kind)
{
	float x[32];
	int16_t x16[32];
	int32_t y[8];
	for (int i = 0; i < 32; i++) {
		x[i] = (float)i / 32.0f;
		x16[i] = (int16_t)i;
	}
	for (int i = 0; i < 8; i++)
		y[i] = i % 2;
	hsize_t d2[2] = {8, 4}, d1[1] = {8}, d32[1] = {32}, d7[1] = {7}, d3[3] = {8, 2, 2};
	if (!strcmp(kind, "nan"))
		x[4 * 5 + 2] = NAN;
	if (!strcmp(kind, "neglabel"))
		y[3] = -1;
	hid_t file = H5Fcreate(out, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	if (!strcmp(kind, "xgroup")) {
		H5Gclose(H5Gcreate2(file, "x", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
	} else if (!strcmp(kind, "xlink")) {
		H5Lcreate_soft("/nowhere", file, "x", H5P_DEFAULT, H5P_DEFAULT);
	} else if (!strcmp(kind, "xcompound")) {
		hid_t ct = H5Tcreate(H5T_COMPOUND, 2 * sizeof(float));
		H5Tinsert(ct, "a", 0, H5T_NATIVE_FLOAT);
		H5Tinsert(ct, "b", sizeof(float), H5T_NATIVE_FLOAT);
		hsize_t d82[2] = {8, 2}; /* 16 pairs: the 32 floats of x */
		raw_dataset(file, "x", ct, 2, d82, x);
		H5Tclose(ct);
	} else if (!strcmp(kind, "wide") || !strcmp(kind, "vast")) {
		hsize_t wide[2] = {2, ((hsize_t)1 << 31) + 2}, vast[2] = {100000, 1000000};
		unwritten(file, "x", "x", H5T_NATIVE_FLOAT, strcmp(kind, "vast") ? wide : vast);
	} else if (!strcmp(kind, "x1d"))
		raw_dataset(file, "x", H5T_NATIVE_FLOAT, 1, d32, x);
	else if (!strcmp(kind, "x3d"))
		raw_dataset(file, "x", H5T_NATIVE_FLOAT, 3, d3, x);
	else if (!strcmp(kind, "int16"))
		raw_dataset(file, "x", H5T_NATIVE_INT16, 2, d2, x16);
	else
		raw_dataset(file, "x", H5T_NATIVE_FLOAT, 2, d2, x);
	if (!strcmp(kind, "ylen"))
		raw_dataset(file, "y", H5T_NATIVE_INT32, 1, d7, y);
	else if (strcmp(kind, "noy"))
		raw_dataset(file, "y", H5T_NATIVE_INT32, 1, d1, y);
	if (!strcmp(kind, "ncarray")) {
		int nc[64];
		for (int i = 0; i < 64; i++)
			nc[i] = 1 << 30;
		hsize_t n64 = 64;
		hid_t ys = H5Dopen2(file, "y", H5P_DEFAULT), space = H5Screate_simple(1, &n64, NULL);
		hid_t a = H5Acreate2(ys, "num_classes", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT);
		H5Awrite(a, H5T_NATIVE_INT, nc);
		H5Aclose(a);
		H5Sclose(space);
		H5Dclose(ys);
	}
	return H5Fclose(file) < 0 ? -1 : 0;
}

static void put_attr(hid_t obj, const char *key, hid_t type, const void *value)
{
	if (H5Aexists(obj, key) > 0)
		H5Adelete(obj, key);
	hid_t space = H5Screate(H5S_SCALAR);
	hid_t a = H5Acreate2(obj, key, type, space, H5P_DEFAULT, H5P_DEFAULT);
	H5Awrite(a, type, value);
	H5Aclose(a);
	H5Sclose(space);
}

/* Replaces the matrix at path by one of another type holding the same
 * values, or by a [rows, cols, 2, 1, 1] float32 array (rank5: more
 * dimensions than a variable has), named name. */
static void restore_as(hid_t file, const char *path, const char *name, hid_t type, int rank5)
{
	hid_t ds = H5Dopen2(file, path, H5P_DEFAULT), space = H5Dget_space(ds);
	hsize_t dims[5] = {0, 0, 2, 1, 1};
	H5Sget_simple_extent_dims(space, dims, NULL);
	size_t n = (size_t)dims[0] * dims[1];
	double *v = malloc(sizeof(double) * n * 2);
	H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
	memcpy(v + n, v, sizeof(double) * n);
	H5Sclose(space);
	H5Dclose(ds);
	H5Ldelete(file, path, H5P_DEFAULT);
	space = H5Screate_simple(rank5 ? 5 : 2, dims, NULL);
	ds = H5Dcreate2(file, path, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
	hid_t str = H5Tcopy(H5T_C_S1);
	H5Tset_size(str, strlen(name) + 1);
	put_attr(ds, "name", str, name);
	H5Tclose(str);
	H5Dclose(ds);
	H5Sclose(space);
	free(v);
}

/* A valid checkpoint whose root attribute key is value: read whole and
 * written again by ckpt_write, so every digest matches. */
static int forge(const char *in, const char *out, const char *key, long value)
{
	struct ckpt_var *vars;
	struct ckpt_meta m;
	int n;
	if (ckpt_read_all(in, &vars, &n, &m))
		return -1;
	if (!strcmp(key, "batch"))
		m.batch = (int)value;
	else if (!strcmp(key, "global_step"))
		m.global_step = value;
	else if (!strcmp(key, "epoch"))
		m.epoch = value;
	else if (!strcmp(key, "step_in_epoch"))
		m.step_in_epoch = value;
	else if (!strcmp(key, "seed"))
		m.seed = (uint64_t)value;
	else
		return fprintf(stderr, "mkdata: cannot forge '%s'\n", key), -1;
	char dir[1100], path[1200], cmd[4096];
	snprintf(dir, sizeof(dir), "%s.forge.d", out);
	mkdir(dir, 0700);
	int rc = ckpt_write(dir, vars, n, &m);
	ckpt_path(dir, m.global_step, path, sizeof(path));
	rc = rc || rename(path, out);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	rc = system(cmd) || rc;
	ckpt_free_vars(vars, n);
	ckpt_meta_free(&m);
	return rc ? -1 : 0;
}

/* Overwrites the first len bytes of path at or after offset from that
 * hold want[0..len), outside [skip, skip + skip_len), with put[0..len): 0,
 * or -1 when they are nowhere. An edit below HDF5, as a disk would make. */
static int patch_bytes(const char *path, long from, const void *want, const void *put,
		       size_t len, long skip, long skip_len)
{
	FILE *f = fopen(path, "r+b");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	unsigned char *buf = malloc((size_t)size);
	rewind(f);
	int rc = buf && fread(buf, 1, (size_t)size, f) == (size_t)size ? -1 : -2;
	for (long at = from; rc == -1 && at + (long)len <= size; at++) {
		if ((at >= skip && at < skip + skip_len) || memcmp(buf + at, want, len))
			continue;
		fseek(f, at, SEEK_SET);
		rc = fwrite(put, 1, len, f) == len ? 0 : -1;
	}
	free(buf);
	return fclose(f) || rc ? -1 : 0;
}

/* dtypebyte and chunkindex: dense.kernel's datatype message (float32
 * little-endian: version 1, class float, its bit fields and size 4) has
 * one byte flipped, or its chunk's address zeroed where the file indexes
 * it (in the layout message of a one-chunk dataset, else the chunk index). */
static int damage_on_disk(const char *out, const char *kind)
{
	hid_t file = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT);
	hid_t ds = file < 0 ? -1 : H5Dopen2(file, "dense.kernel", H5P_DEFAULT);
	if (ds < 0)
		return -1;
	H5O_info_t oi;
	hsize_t first[2] = {0, 0}, size = 0;
	haddr_t addr = 0;
	unsigned mask;
	hid_t space = H5Dget_space(ds);
	int rc = H5Oget_info2(ds, &oi, H5O_INFO_BASIC) < 0 ||
		 H5Dget_chunk_info_by_coord(ds, first, &mask, &addr, &size) < 0;
	H5Sclose(space);
	H5Dclose(ds);
	H5Fclose(file);
	if (rc)
		return -1;
	if (!strcmp(kind, "dtypebyte")) {
		const unsigned char f32le[8] = {0x11, 0x20, 0x1f, 0x00, 0x04, 0, 0, 0},
				    f40le[8] = {0x11, 0x20, 0x1f, 0x00, 0x05, 0, 0, 0};
		return patch_bytes(out, (long)oi.addr, f32le, f40le, sizeof(f32le), 0, 0);
	}
	/* the file's addresses: 8 bytes, little-endian */
	uint64_t le = (uint64_t)addr, zero = 0;
	return patch_bytes(out, 0, &le, &zero, sizeof(le), (long)addr, (long)size);
}

static int badckpt(const char *in, const char *out, const char *kind)
{
	if (!strncmp(kind, "forge:", 6) && strchr(kind, '=')) {
		char key[64];
		const char *eq = strchr(kind, '=');
		snprintf(key, sizeof(key), "%.*s", (int)(eq - kind - 6), kind + 6);
		return forge(in, out, key, strtol(eq + 1, NULL, 10));
	}
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", in, out);
	if (system(cmd))
		return -1;
	if (!strcmp(kind, "dtypebyte") || !strcmp(kind, "chunkindex"))
		return damage_on_disk(out, kind);
	hid_t file = H5Fopen(out, H5F_ACC_RDWR, H5P_DEFAULT);
	if (file < 0)
		return -1;
	const char *eq = strchr(kind, '=');
	if (eq) {
		char key[64];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - kind), kind);
		int64_t value = strtoll(eq + 1, NULL, 10);
		put_attr(file, key, H5T_NATIVE_INT64, &value);
	} else if (!strcmp(kind, "be")) {
		restore_as(file, "dense.kernel", "dense/kernel", H5T_IEEE_F32BE, 0);
	} else if (!strcmp(kind, "moved")) {
		H5Lmove(file, "dense.kernel", file, "dense.kernel2", H5P_DEFAULT, H5P_DEFAULT);
	} else if (!strcmp(kind, "stepdset")) {
		hid_t ds = H5Dopen2(file, "global_step", H5P_DEFAULT);
		int64_t step = 0;
		H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &step);
		step++;
		H5Dwrite(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &step);
		H5Dclose(ds);
	} else if (!strcmp(kind, "rank5")) {
		restore_as(file, "dense.kernel", "dense/kernel", H5T_NATIVE_FLOAT, 1);
	} else if (!strcmp(kind, "f64")) {
		restore_as(file, "dense.kernel", "dense/kernel", H5T_NATIVE_DOUBLE, 0);
	} else if (!strcmp(kind, "nan")) {
		hid_t ds = H5Dopen2(file, "dense.kernel", H5P_DEFAULT);
		float v[1] = {NAN};
		hsize_t first[2] = {0, 0}, one[2] = {1, 1};
		hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(2, one, NULL);
		H5Sselect_hyperslab(fs, H5S_SELECT_SET, first, NULL, one, NULL);
		H5Dwrite(ds, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, v);
		H5Sclose(ms);
		H5Sclose(fs);
		H5Dclose(ds);
	} else if (!strcmp(kind, "huge") || !strcmp(kind, "holes")) {
		hid_t ds = H5Dopen2(file, "dense.kernel", H5P_DEFAULT), space = H5Dget_space(ds);
		hsize_t dims[2] = {(hsize_t)1 << 31, (hsize_t)1 << 31};
		if (!strcmp(kind, "holes"))
			H5Sget_simple_extent_dims(space, dims, NULL);
		H5Sclose(space);
		H5Dclose(ds);
		H5Ldelete(file, "dense.kernel", H5P_DEFAULT);
		unwritten(file, "dense.kernel", "dense/kernel", H5T_NATIVE_FLOAT, dims);
	} else if (!strcmp(kind, "dup")) {
		H5Lcopy(file, "dense.kernel", file, "dense.kernel.again", H5P_DEFAULT, H5P_DEFAULT);
	} else if (!strcmp(kind, "strarray")) {
		const char *four[4] = {"mtrain-checkpoint", "b", "c", "d"};
		hid_t vl = H5Tcopy(H5T_C_S1);
		H5Tset_size(vl, H5T_VARIABLE);
		hsize_t n4 = 4;
		hid_t space = H5Screate_simple(1, &n4, NULL);
		H5Adelete(file, "format");
		hid_t a = H5Acreate2(file, "format", vl, space, H5P_DEFAULT, H5P_DEFAULT);
		H5Awrite(a, vl, four);
		H5Aclose(a);
		H5Sclose(space);
		H5Tclose(vl);
	} else if (!strcmp(kind, "vlconfig")) {
		hid_t a = H5Aopen(file, "config", H5P_DEFAULT), ft = H5Aget_type(a);
		size_t len = H5Tget_size(ft);
		char *text = calloc(len + 1, 1);
		H5Aread(a, ft, text);
		H5Tclose(ft);
		H5Aclose(a);
		hid_t vl = H5Tcopy(H5T_C_S1);
		H5Tset_size(vl, H5T_VARIABLE);
		H5Tset_cset(vl, H5T_CSET_UTF8);
		put_attr(file, "config", vl, &text);
		H5Tclose(vl);
		free(text);
	} else {
		fprintf(stderr, "mkdata: unknown checkpoint defect '%s'\n", kind);
		H5Fclose(file);
		return -1;
	}
	return H5Fclose(file) < 0 ? -1 : 0;
}

/* A file of tokens that count up: tokens 0, 1, ..., n - 1 and val_tokens
 * 0, ..., val - 1 (none when 0), vocab_size vocab (n and val by default;
 * less makes ids past it), int32. */
static int counting(const char *out, long n, long val, int vocab)
{
	long most = n > val ? n : val;
	int32_t *ids = malloc(sizeof(int32_t) * (size_t)(most > 0 ? most : 1));
	for (long i = 0; i < most; i++)
		ids[i] = (int32_t)i;
	const struct tokens_meta meta = {.tokenizer = "counting"};
	int rc = dataset_write_tokens(out, ids, n, ids, val, 4, vocab ? vocab : (int)most, &meta);
	free(ids);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = -1;
	if (argc >= 7 && !strcmp(argv[1], "synth"))
		rc = synth(argv[2], atol(argv[3]), atoi(argv[4]), atoi(argv[5]),
			   strtoull(argv[6], NULL, 10), argc > 7 && !strcmp(argv[7], "u8"));
	else if (argc == 6 && !strcmp(argv[1], "slice"))
		rc = slice(argv[2], argv[3], atol(argv[4]), atol(argv[5]));
	else if (argc == 7 && !strcmp(argv[1], "reshape")) {
		const int row[3] = {atoi(argv[4]), atoi(argv[5]), atoi(argv[6])};
		rc = reshape(argv[2], argv[3], row);
	} else if (argc == 5 && !strcmp(argv[1], "overflow"))
		rc = overflow(argv[2], argv[3], atol(argv[4]));
	else if (argc == 4 && !strcmp(argv[1], "bad"))
		rc = bad(argv[2], argv[3]);
	else if ((argc == 5 || argc == 6) && !strcmp(argv[1], "counting"))
		rc = counting(argv[2], atol(argv[3]), atol(argv[4]), argc == 6 ? atoi(argv[5]) : 0);
	else if (argc == 5 && !strcmp(argv[1], "badckpt"))
		rc = badckpt(argv[2], argv[3], argv[4]);
	else
		fprintf(stderr, "usage: mkdata synth OUT N D C SEED [u8] | slice IN OUT FIRST COUNT"
				" | reshape IN OUT H W C | bad OUT KIND | badckpt IN OUT KIND"
				" | counting OUT N VAL [VOCAB]\n");
	if (rc && user_error_pending())
		fprintf(stderr, "mkdata: %s\n", user_error_text());
	return rc ? 1 : 0;
}
