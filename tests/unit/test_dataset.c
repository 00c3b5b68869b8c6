/* Data files loaded whole: IDX (.gz) import (images as [N, H, W, 1]),
 * whole and sharded loads of x [N, D] and [N, H, W, C], uint8 scaling,
 * float32 files, and one-line errors naming the file and the problem for
 * bad input. Streamed reading is test_dataset_stream.c. */
#include "dataset.h"
#include "log.h"
#include "unit.h"
#include "fixtures.h"

#include <hdf5.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

enum { N = 10, ROWS = 2, COLS = 3, DIM = ROWS * COLS, CLASSES = 4 };

static char tmpdir[512];

static void path_in(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* Writes len bytes to a gzip file. */
static int write_gz(const char *path, const unsigned char *data, size_t len)
{
	gzFile f = gzopen(path, "wb");
	if (!f)
		return -1;
	int put = gzwrite(f, data, (unsigned)len);
	return gzclose(f) == Z_OK && put == (int)len ? 0 : -1;
}

/* IDX images (magic 0x803, n, rows, cols, bytes) of n_hdr images in the
 * header, n_data in the body; labels (magic 0x801, n, bytes). */
static void write_idx(const char *images, const char *labels, uint32_t magic,
		      uint32_t n_hdr, uint32_t n_data, const uint8_t *x, const uint8_t *y)
{
	unsigned char img[16 + N * DIM], lab[8 + N];
	put_be32(img, magic);
	put_be32(img + 4, n_hdr);
	put_be32(img + 8, ROWS);
	put_be32(img + 12, COLS);
	memcpy(img + 16, x, (size_t)n_data * DIM);
	put_be32(lab, 0x801);
	put_be32(lab + 4, n_hdr);
	memcpy(lab + 8, y, n_hdr);
	EXPECT(write_gz(images, img, 16 + (size_t)n_data * DIM) == 0);
	EXPECT(write_gz(labels, lab, 8 + n_hdr) == 0);
}

/* The rank of dataset x in path, its dims in dims; -1 if unreadable. */
static int x_dims(const char *path, hsize_t dims[4])
{
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	hid_t ds = f < 0 ? -1 : H5Dopen2(f, "x", H5P_DEFAULT);
	hid_t sp = ds < 0 ? -1 : H5Dget_space(ds);
	int nd = sp < 0 ? -1 : H5Sget_simple_extent_ndims(sp);
	if (nd >= 1 && nd <= 4)
		H5Sget_simple_extent_dims(sp, dims, NULL);
	if (sp >= 0)
		H5Sclose(sp);
	if (ds >= 0)
		H5Dclose(ds);
	if (f >= 0)
		H5Fclose(f);
	return nd;
}

static void check_idx_import(const uint8_t *x, const uint8_t *y)
{
	char images[1100], labels[1100], h5[1100];
	path_in(images, sizeof(images), "images-idx3-ubyte.gz");
	path_in(labels, sizeof(labels), "labels-idx1-ubyte.gz");
	path_in(h5, sizeof(h5), "train.h5");
	write_idx(images, labels, 0x803, N, N, x, y);
	user_error_clear();
	EXPECT(dataset_import_idx(images, labels, h5) == 0);
	EXPECT(!user_error_pending());
	/* Images as Keras stores them: [N, rows, cols, 1]. */
	hsize_t dims[4] = {0};
	EXPECT(x_dims(h5, dims) == 4);
	EXPECT(dims[0] == N && dims[1] == ROWS && dims[2] == COLS && dims[3] == 1);

	struct dataset d;
	EXPECT(dataset_load(&d, h5, 0, 1) == 0);
	EXPECT(d.n_total == N && d.first == 0 && d.n == N);
	EXPECT(d.dim == DIM);
	EXPECT(d.shape[0] == ROWS && d.shape[1] == COLS && d.shape[2] == 1);
	EXPECT(d.classes == CLASSES);
	EXPECT(d.x8 != NULL && d.xf == NULL);
	EXPECT(d.x8 && memcmp(d.x8, x, N * DIM) == 0);
	int labels_equal = 1;
	for (int i = 0; i < N; i++)
		labels_equal &= d.y[i] == y[i];
	EXPECT(labels_equal);

	/* gather: uint8 scaled by 1/255, rows in the order asked for. */
	const uint32_t idx[3] = {7, 0, 9};
	float xb[3 * DIM];
	int32_t yb[3];
	dataset_gather(&d, idx, 3, xb, yb);
	for (int i = 0; i < 3; i++) {
		EXPECT(yb[i] == y[idx[i]]);
		for (int j = 0; j < DIM; j++)
			EXPECT_NEAR(xb[i * DIM + j], x[idx[i] * DIM + j] / 255.0, 1e-7);
	}
	EXPECT(xb[0] >= 0.0f && xb[0] <= 1.0f);
	dataset_rows(&d, 4, 2, xb, yb);
	EXPECT(yb[0] == y[4] && yb[1] == y[5]);
	EXPECT_NEAR(xb[DIM + 2], x[5 * DIM + 2] / 255.0, 1e-7);
	dataset_free(&d);
	EXPECT(d.x8 == NULL && d.y == NULL);

	/* Part 1 of 3 of 10 rows: [3, 6); indices relative to the part. */
	EXPECT(dataset_load(&d, h5, 1, 3) == 0);
	EXPECT(d.n_total == N && d.first == N / 3 && d.n == 2 * N / 3 - N / 3);
	EXPECT(d.x8 && memcmp(d.x8, x + (size_t)(N / 3) * DIM, (size_t)d.n * DIM) == 0);
	EXPECT(d.y[0] == y[N / 3] && d.y[d.n - 1] == y[2 * N / 3 - 1]);
	const uint32_t first = 0;
	dataset_gather(&d, &first, 1, xb, yb);
	EXPECT(yb[0] == y[N / 3]);
	EXPECT_NEAR(xb[1], x[(N / 3) * DIM + 1] / 255.0, 1e-7);
	EXPECT(d.classes == CLASSES); /* from the file, not from this part's labels */
	dataset_free(&d);

	/* The parts tile the file. */
	long covered = 0;
	for (int part = 0; part < 3; part++) {
		EXPECT(dataset_load(&d, h5, part, 3) == 0);
		EXPECT(d.first == covered);
		covered += d.n;
		dataset_free(&d);
	}
	EXPECT(covered == N);

	/* The importer reads uncompressed IDX files as well. */
	unsigned char raw[16 + N * DIM];
	put_be32(raw, 0x803);
	put_be32(raw + 4, N);
	put_be32(raw + 8, ROWS);
	put_be32(raw + 12, COLS);
	memcpy(raw + 16, x, N * DIM);
	path_in(images, sizeof(images), "images-raw");
	EXPECT(fixture_write_file(images, raw, sizeof(raw)) == 0);
	path_in(h5, sizeof(h5), "raw.h5");
	EXPECT(dataset_import_idx(images, labels, h5) == 0);
	EXPECT(dataset_load(&d, h5, 0, 1) == 0);
	EXPECT(d.x8 && memcmp(d.x8, x, N * DIM) == 0);
	dataset_free(&d);
}

static void check_float_file(void)
{
	enum { FN = 5, FD = 3 };
	float xf[FN * FD];
	int32_t y[FN] = {0, 6, 2, 1, 0};
	for (int i = 0; i < FN * FD; i++)
		xf[i] = (float)i * 0.37f - 2.0f;
	char h5[1100];
	path_in(h5, sizeof(h5), "float.h5");
	const int flat[3] = {1, 1, FD};
	EXPECT(dataset_write(h5, NULL, xf, y, FN, flat, 7) == 0);
	hsize_t dims[4] = {0};
	EXPECT(x_dims(h5, dims) == 2 && dims[0] == FN && dims[1] == FD); /* a flat row: [N, D] */
	struct dataset d;
	EXPECT(dataset_load(&d, h5, 0, 1) == 0);
	EXPECT(d.n == FN && d.dim == FD);
	EXPECT(d.shape[0] == 1 && d.shape[1] == 1 && d.shape[2] == FD);
	char text[32];
	dataset_row_text(&d, text, sizeof(text));
	EXPECT_STR(text, "[3]");
	EXPECT(d.classes == 7); /* num_classes attribute beats max(y) + 1 */
	EXPECT(d.xf != NULL && d.x8 == NULL);
	EXPECT(d.xf && memcmp(d.xf, xf, sizeof(xf)) == 0);
	EXPECT(memcmp(d.y, y, sizeof(y)) == 0);
	const uint32_t idx[1] = {3};
	float row[FD];
	int32_t label;
	dataset_gather(&d, idx, 1, row, &label);
	EXPECT(memcmp(row, xf + 3 * FD, sizeof(row)) == 0); /* floats are not rescaled */
	EXPECT(label == 1);
	dataset_free(&d);

	/* No temporary file is left beside it. */
	char tmp[1200];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", h5, (int)getpid());
	EXPECT(access(tmp, F_OK) != 0);
}

/* An HDF5 file with dataset x of type xt and dims xd, and y int32 [ny]. */
static void write_h5(const char *path, hid_t xt, int xnd, const hsize_t *xd, const void *x,
		     hsize_t ny, const int32_t *y)
{
	hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	EXPECT(f >= 0);
	hid_t s = H5Screate_simple(xnd, xd, NULL);
	hid_t ds = H5Dcreate2(f, "x", xt, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	EXPECT(H5Dwrite(ds, xt, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) >= 0);
	H5Dclose(ds);
	H5Sclose(s);
	s = H5Screate_simple(1, &ny, NULL);
	ds = H5Dcreate2(f, "y", H5T_NATIVE_INT32, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	EXPECT(H5Dwrite(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, y) >= 0);
	H5Dclose(ds);
	H5Sclose(s);
	H5Fclose(f);
}

/* dataset_load of path fails with -1 and a message naming path and parts. */
static void expect_load_error(const char *path, const char *part1, const char *part2)
{
	struct dataset d;
	user_error_clear();
	EXPECT(dataset_load(&d, path, 0, 1) == -1);
	EXPECT(contains(user_error_text(), path));
	EXPECT(contains(user_error_text(), part1));
	if (part2)
		EXPECT(contains(user_error_text(), part2));
	EXPECT(d.x8 == NULL && d.xf == NULL && d.y == NULL);
}

static void check_bad_files(void)
{
	char path[1100];
	path_in(path, sizeof(path), "absent.h5");
	expect_load_error(path, "cannot open", NULL);

	path_in(path, sizeof(path), "text.h5");
	EXPECT(fixture_write_file(path, "x,y\n1,2\n", 8) == 0);
	expect_load_error(path, "not an HDF5 file", NULL);

	float xf[4 * 3] = {0};
	int32_t y[12] = {0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1};
	const int flat[3] = {1, 1, 3};
	xf[3 * 3 + 1] = NAN;
	path_in(path, sizeof(path), "nan.h5");
	EXPECT(dataset_write(path, NULL, xf, y, 4, flat, 3) == 0);
	expect_load_error(path, "NaN", "x[3, 1]");

	xf[3 * 3 + 1] = INFINITY;
	path_in(path, sizeof(path), "inf.h5");
	EXPECT(dataset_write(path, NULL, xf, y, 4, flat, 3) == 0);
	expect_load_error(path, "infinite", "x[3, 1]");
	xf[3 * 3 + 1] = 0.0f;

	int32_t neg[4] = {0, 1, -1, 2};
	path_in(path, sizeof(path), "negative.h5");
	EXPECT(dataset_write(path, NULL, xf, neg, 4, flat, 3) == 0);
	expect_load_error(path, "y[2] = -1", "negative");

	int32_t big[4] = {0, 1, 5, 2};
	path_in(path, sizeof(path), "beyond.h5");
	EXPECT(dataset_write(path, NULL, xf, big, 4, flat, 3) == 0);
	expect_load_error(path, "labels go up to 5", "num_classes = 3");

	const hsize_t xd2[2] = {4, 3};
	path_in(path, sizeof(path), "rows.h5");
	write_h5(path, H5T_NATIVE_FLOAT, 2, xd2, xf, 5, y);
	expect_load_error(path, "'y' has 5 rows", "'x' has 4");

	const hsize_t xd1[1] = {12};
	path_in(path, sizeof(path), "flat.h5");
	write_h5(path, H5T_NATIVE_FLOAT, 1, xd1, xf, 12, y);
	expect_load_error(path, "'x' has 1 dimensions", "expected 2 or 4 ([N, D] or [N, H, W, C])");

	/* Rank 3 (an image without its channels) and 5: one line each. */
	const hsize_t xd3[3] = {4, 3, 1}, xd5[5] = {4, 3, 1, 1, 1};
	path_in(path, sizeof(path), "rank3.h5");
	write_h5(path, H5T_NATIVE_FLOAT, 3, xd3, xf, 4, y);
	expect_load_error(path, "rank3.h5: dataset 'x' has 3 dimensions; expected 2 or 4 "
			  "([N, D] or [N, H, W, C])", NULL);
	EXPECT(!strchr(user_error_text(), '\n'));
	path_in(path, sizeof(path), "rank5.h5");
	write_h5(path, H5T_NATIVE_FLOAT, 5, xd5, xf, 4, y);
	expect_load_error(path, "'x' has 5 dimensions; expected 2 or 4", NULL);

	int16_t x16[4 * 3] = {0};
	path_in(path, sizeof(path), "int16.h5");
	write_h5(path, H5T_NATIVE_INT16, 2, xd2, x16, 4, y);
	expect_load_error(path, "expected float32 or uint8", NULL);

	double x64[4 * 3] = {0};
	path_in(path, sizeof(path), "double.h5");
	write_h5(path, H5T_NATIVE_DOUBLE, 2, xd2, x64, 4, y);
	expect_load_error(path, "expected float32 or uint8", NULL);
}

/* x [N, H, W, C]: the row shape recorded, values in order (channels
 * last), sharded loads, uint8 written and read back as images, a bad value
 * named by its four indices. */
static void check_images(void)
{
	enum { IN = 5, H = 2, W = 3, C = 2, ID = H * W * C };
	float xf[IN * ID];
	uint8_t x8[IN * ID];
	int32_t y[IN] = {1, 0, 2, 1, 0};
	for (int i = 0; i < IN * ID; i++) {
		xf[i] = (float)i * 0.25f - 3.0f;
		x8[i] = (uint8_t)(i * 7 + 1);
	}
	char path[1100], text[32];
	const hsize_t xd[4] = {IN, H, W, C};
	path_in(path, sizeof(path), "images-f32.h5");
	write_h5(path, H5T_NATIVE_FLOAT, 4, xd, xf, IN, y);
	struct dataset d;
	user_error_clear();
	EXPECT(dataset_load(&d, path, 0, 1) == 0);
	EXPECT(d.n == IN && d.dim == ID);
	EXPECT(d.shape[0] == H && d.shape[1] == W && d.shape[2] == C);
	EXPECT(d.xf && memcmp(d.xf, xf, sizeof(xf)) == 0);
	dataset_row_text(&d, text, sizeof(text));
	EXPECT_STR(text, "[2,3,2]");
	float row[ID];
	int32_t label;
	const uint32_t idx[1] = {4};
	dataset_gather(&d, idx, 1, row, &label);
	EXPECT(memcmp(row, xf + 4 * ID, sizeof(row)) == 0 && label == 0);
	dataset_free(&d);
	/* Rows [2, 5) of 5 in part 1 of 2: whole images. */
	EXPECT(dataset_load(&d, path, 1, 2) == 0);
	EXPECT(d.first == 2 && d.n == 3 && d.shape[2] == C);
	EXPECT(d.xf && memcmp(d.xf, xf + 2 * ID, 3 * ID * sizeof(float)) == 0);
	dataset_free(&d);

	/* dataset_write of image rows writes [N, H, W, C]; uint8 reads back. */
	const int image[3] = {H, W, C};
	hsize_t dims[4] = {0};
	path_in(path, sizeof(path), "images-u8.h5");
	EXPECT(dataset_write(path, x8, NULL, y, IN, image, 3) == 0);
	EXPECT(x_dims(path, dims) == 4 && dims[0] == IN && dims[1] == H && dims[2] == W &&
	       dims[3] == C);
	EXPECT(dataset_load(&d, path, 0, 1) == 0);
	EXPECT(d.x8 && memcmp(d.x8, x8, sizeof(x8)) == 0);
	EXPECT(d.shape[0] == H && d.shape[1] == W && d.shape[2] == C);
	dataset_free(&d);

	/* Row 3, h 1, w 2, c 0 is cell 3 * 12 + 1 * 6 + 2 * 2 + 0. */
	xf[3 * ID + 10] = NAN;
	path_in(path, sizeof(path), "images-nan.h5");
	write_h5(path, H5T_NATIVE_FLOAT, 4, xd, xf, IN, y);
	expect_load_error(path, "x[3, 1, 2, 0] is NaN", NULL);
	user_error_clear();
}

static void check_bad_idx(const uint8_t *x, const uint8_t *y)
{
	char images[1100], labels[1100], h5[1100];
	path_in(images, sizeof(images), "bad-images.gz");
	path_in(labels, sizeof(labels), "bad-labels.gz");
	path_in(h5, sizeof(h5), "bad.h5");

	/* Wrong magic: a label file given as images. */
	write_idx(images, labels, 0x801, N, N, x, y);
	user_error_clear();
	EXPECT(dataset_import_idx(images, labels, h5) == -1);
	EXPECT(contains(user_error_text(), images));
	EXPECT(contains(user_error_text(), "magic"));
	EXPECT(access(h5, F_OK) != 0);

	/* The header promises 10 images, the body holds 6. */
	write_idx(images, labels, 0x803, N, 6, x, y);
	user_error_clear();
	EXPECT(dataset_import_idx(images, labels, h5) == -1);
	EXPECT(contains(user_error_text(), images));
	EXPECT(contains(user_error_text(), "truncated"));
	EXPECT(access(h5, F_OK) != 0);

	/* A forged header whose sizes wrap around to 0 in 32 bits: 2^16 images
	 * of 2^24 x 2^24 pixels "match" an empty body. */
	unsigned char forged[16], labels_hdr[8];
	put_be32(forged, 0x803);
	put_be32(forged + 4, 1u << 16);
	put_be32(forged + 8, 1u << 24);
	put_be32(forged + 12, 1u << 24);
	put_be32(labels_hdr, 0x801);
	put_be32(labels_hdr + 4, 1u << 16);
	EXPECT(write_gz(images, forged, sizeof(forged)) == 0);
	EXPECT(write_gz(labels, labels_hdr, sizeof(labels_hdr)) == 0);
	user_error_clear();
	EXPECT(dataset_import_idx(images, labels, h5) == -1);
	EXPECT(contains(user_error_text(), "65536 images of 16777216x16777216"));
	EXPECT(access(h5, F_OK) != 0);

	/* A gzip stream cut short. */
	write_idx(images, labels, 0x803, N, N, x, y);
	size_t len = 0;
	unsigned char *gz = fixture_read_file(images, &len);
	EXPECT(gz != NULL);
	if (gz) {
		EXPECT(fixture_write_file(images, gz, len / 2) == 0);
		user_error_clear();
		EXPECT(dataset_import_idx(images, labels, h5) == -1);
		EXPECT(contains(user_error_text(), images));
		free(gz);
	}

	/* An output folder that does not exist: named, with the reason. */
	write_idx(images, labels, 0x803, N, N, x, y);
	char nowhere[1100];
	path_in(nowhere, sizeof(nowhere), "no-such-folder/out.h5");
	user_error_clear();
	EXPECT(dataset_import_idx(images, labels, nowhere) == -1);
	EXPECT(contains(user_error_text(), "no-such-folder/out.h5: cannot create data file: No such"));

	/* A missing labels file. */
	write_idx(images, labels, 0x803, N, N, x, y);
	path_in(labels, sizeof(labels), "absent-labels.gz");
	user_error_clear();
	EXPECT(dataset_import_idx(images, labels, h5) == -1);
	EXPECT(contains(user_error_text(), labels));
	EXPECT(access(h5, F_OK) != 0);
	user_error_clear();
}

int main(void)
{
	if (fixture_tmpdir(tmpdir, sizeof(tmpdir), "dataset"))
		return 1;
	uint8_t x[N * DIM], y[N];
	for (int i = 0; i < N * DIM; i++)
		x[i] = (uint8_t)(i * 37 + 11);
	/* 0,1,2,0,1,2,0,1,2,3: the middle third alone never shows class 3. */
	for (int i = 0; i < N; i++)
		y[i] = (uint8_t)(i == N - 1 ? CLASSES - 1 : i % 3);
	check_idx_import(x, y);
	check_float_file();
	check_images();
	check_bad_files();
	check_bad_idx(x, y);
	fixture_rmtree(tmpdir);
	return unit_done("test_dataset");
}
