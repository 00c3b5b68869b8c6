/* Test fixtures for the streamed reader: data files too large to hold in
 * memory, and defects deep inside a valid data file.
 *
 *   mkrows big OUT N H W C SEED   x [N, H, W, C] uint8 (random bytes), y [N]
 *                                 (10 classes), stored whole as mtrain import
 *                                 writes them, written 64 MiB at a time
 *   mkrows poke FILE nan ROW      x[ROW, 0...] = NaN in place (float32 x)
 *   mkrows poke FILE label ROW V  y[ROW] = V in place
 *   mkrows forge FILE             x's address in its layout message moved
 *                                 past the end of the file, as a forger
 *                                 (or a bad disk) would, below HDF5
 *   mkrows sample N SEED COUNT    the rows mtrain's start-up digest reads
 *                                 (one a line), so a test can put a defect
 *                                 where only training finds it
 *   mkrows where N SEED ROW       ROW's position in epoch 0's order
 */
#include "dataset.h"
#include "order.h"

#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_BYTES ((size_t)64 << 20)

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int big(const char *out, long n, int h, int w, int c, uint64_t seed)
{
	hid_t file = H5Fcreate(out, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	if (file < 0)
		return -1;
	hsize_t xd[4] = {(hsize_t)n, (hsize_t)h, (hsize_t)w, (hsize_t)c}, yd[1] = {(hsize_t)n};
	hid_t xs = H5Screate_simple(4, xd, NULL), ys = H5Screate_simple(1, yd, NULL);
	hid_t x = H5Dcreate2(file, "x", H5T_NATIVE_UINT8, xs, H5P_DEFAULT, H5P_DEFAULT,
			     H5P_DEFAULT);
	hid_t y = H5Dcreate2(file, "y", H5T_NATIVE_INT32, ys, H5P_DEFAULT, H5P_DEFAULT,
			     H5P_DEFAULT);
	size_t row = (size_t)h * w * c;
	long block = (long)(BLOCK_BYTES / row);
	uint8_t *buf = malloc(row * (size_t)block);
	int32_t *lab = malloc(sizeof(int32_t) * (size_t)block);
	int rc = x < 0 || y < 0 || !buf || !lab;
	for (long at = 0; at < n && !rc; at += block) {
		long rows = n - at < block ? n - at : block;
		for (size_t i = 0; i < row * (size_t)rows; i += 8) {
			uint64_t v = splitmix(&seed);
			memcpy(buf + i, &v, row * (size_t)rows - i < 8 ? row * (size_t)rows - i : 8);
		}
		for (long i = 0; i < rows; i++)
			lab[i] = (int32_t)(splitmix(&seed) % 10);
		hsize_t start[4] = {(hsize_t)at}, count[4] = {(hsize_t)rows, xd[1], xd[2], xd[3]};
		hid_t mx = H5Screate_simple(4, count, NULL), my = H5Screate_simple(1, count, NULL);
		rc |= H5Sselect_hyperslab(xs, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
		      H5Dwrite(x, H5T_NATIVE_UINT8, mx, xs, H5P_DEFAULT, buf) < 0 ||
		      H5Sselect_hyperslab(ys, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
		      H5Dwrite(y, H5T_NATIVE_INT32, my, ys, H5P_DEFAULT, lab) < 0;
		H5Sclose(mx);
		H5Sclose(my);
	}
	int classes = 10;
	hid_t as = H5Screate(H5S_SCALAR);
	hid_t a = H5Acreate2(y, "num_classes", H5T_NATIVE_INT, as, H5P_DEFAULT, H5P_DEFAULT);
	rc |= H5Awrite(a, H5T_NATIVE_INT, &classes) < 0;
	H5Aclose(a);
	H5Sclose(as);
	free(buf);
	free(lab);
	H5Dclose(x);
	H5Dclose(y);
	H5Sclose(xs);
	H5Sclose(ys);
	return H5Fclose(file) < 0 || rc ? -1 : 0;
}

/* One value of row in place: every value of x's row NaN, or y's label. */
static int poke(const char *path, const char *kind, long row, int value)
{
	hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
	int nan_row = !strcmp(kind, "nan");
	hid_t ds = file < 0 ? -1 : H5Dopen2(file, nan_row ? "x" : "y", H5P_DEFAULT);
	if (ds < 0 || (nan_row && H5Tget_class(H5Dget_type(ds)) != H5T_FLOAT)) {
		fprintf(stderr, "mkrows: %s: no dataset to poke (poke nan needs float32 x)\n", path);
		if (file >= 0)
			H5Fclose(file);
		return -1;
	}
	hid_t fs = H5Dget_space(ds);
	hsize_t dims[4] = {0};
	int nd = H5Sget_simple_extent_dims(fs, dims, NULL);
	hsize_t start[4] = {(hsize_t)row}, count[4] = {1, dims[1], dims[2], dims[3]};
	size_t cells = 1;
	for (int i = 1; i < nd; i++)
		cells *= dims[i];
	float *v = malloc(sizeof(float) * cells);
	for (size_t i = 0; i < cells; i++)
		v[i] = NAN;
	hid_t ms = H5Screate_simple(nd, count, NULL);
	int rc = H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
		 (nan_row ? H5Dwrite(ds, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, v)
			  : H5Dwrite(ds, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, &value)) < 0;
	free(v);
	H5Sclose(ms);
	H5Sclose(fs);
	H5Dclose(ds);
	return H5Fclose(file) < 0 || rc ? -1 : 0;
}

/* The 8 bytes of x's data address (little-endian, as the file stores
 * addresses) before the data, replaced by an address 1 TiB further. */
static int forge(const char *path)
{
	hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	hid_t ds = file < 0 ? -1 : H5Dopen2(file, "x", H5P_DEFAULT);
	haddr_t at = ds < 0 ? HADDR_UNDEF : H5Dget_offset(ds);
	if (ds >= 0)
		H5Dclose(ds);
	if (file >= 0)
		H5Fclose(file);
	FILE *f = at == HADDR_UNDEF ? NULL : fopen(path, "r+b");
	if (!f)
		return -1;
	unsigned char *head = malloc(at);
	int rc = -1;
	uint64_t want = (uint64_t)at, put = want + ((uint64_t)1 << 40);
	if (head && fread(head, 1, at, f) == at)
		for (size_t i = 0; i + 8 <= at && rc; i++)
			if (!memcmp(head + i, &want, 8)) {
				fseek(f, (long)i, SEEK_SET);
				rc = fwrite(&put, 1, 8, f) == 8 ? 0 : -1;
			}
	free(head);
	return fclose(f) || rc ? -1 : 0;
}

int main(int argc, char **argv)
{
	int rc = -1;
	if (argc == 8 && !strcmp(argv[1], "big"))
		rc = big(argv[2], atol(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]),
			 strtoull(argv[7], NULL, 10));
	else if (argc >= 5 && !strcmp(argv[1], "poke"))
		rc = poke(argv[2], argv[3], atol(argv[4]), argc > 5 ? atoi(argv[5]) : 0);
	else if (argc == 3 && !strcmp(argv[1], "forge"))
		rc = forge(argv[2]);
	else if (argc == 5 && !strcmp(argv[1], "sample")) {
		long n = atol(argv[2]), count = atol(argv[4]);
		uint64_t seed = strtoull(argv[3], NULL, 10);
		for (long i = 0; i < count && i < n; i++)
			printf("%ld\n", dataset_sample_row(seed, i, n));
		rc = 0;
	} else if (argc == 5 && !strcmp(argv[1], "where")) {
		uint64_t n = strtoull(argv[2], NULL, 10), seed = strtoull(argv[3], NULL, 10);
		uint64_t row = strtoull(argv[4], NULL, 10);
		for (uint64_t i = 0; i < n && rc; i++)
			if (order_row(seed, 0, i, n) == row) {
				printf("%llu\n", (unsigned long long)i);
				rc = 0;
			}
	} else
		fprintf(stderr, "usage: mkrows big OUT N H W C SEED | poke FILE nan ROW | poke FILE "
				"label ROW V | forge FILE | sample N SEED COUNT | where N SEED ROW\n");
	return rc ? 1 : 0;
}
