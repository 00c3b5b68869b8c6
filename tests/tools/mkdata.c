/* Test fixtures: writes small HDF5 data files in mtrain's layout, learnable
 * synthetic ones, slices of real ones, and deliberately broken ones.
 *
 *   mkdata synth OUT N D C SEED [u8]   N rows, D features, C classes
 *   mkdata slice IN OUT FIRST COUNT    rows [FIRST, FIRST+COUNT) of IN
 *   mkdata bad OUT KIND                KIND: nan neglabel x1d int16 ylen noy
 */
#include "dataset.h"
#include "log.h"
#include "rng.h"

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	int rc = dataset_write(out, u8 ? x8 : NULL, u8 ? NULL : x, y, n, d, c);
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
			       d.dim, d.classes);
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
	hsize_t d2[2] = {8, 4}, d1[1] = {8}, d32[1] = {32}, d7[1] = {7};
	if (!strcmp(kind, "nan"))
		x[4 * 5 + 2] = NAN;
	if (!strcmp(kind, "neglabel"))
		y[3] = -1;
	hid_t file = H5Fcreate(out, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	if (!strcmp(kind, "x1d"))
		raw_dataset(file, "x", H5T_NATIVE_FLOAT, 1, d32, x);
	else if (!strcmp(kind, "int16"))
		raw_dataset(file, "x", H5T_NATIVE_INT16, 2, d2, x16);
	else
		raw_dataset(file, "x", H5T_NATIVE_FLOAT, 2, d2, x);
	if (!strcmp(kind, "ylen"))
		raw_dataset(file, "y", H5T_NATIVE_INT32, 1, d7, y);
	else if (strcmp(kind, "noy"))
		raw_dataset(file, "y", H5T_NATIVE_INT32, 1, d1, y);
	return H5Fclose(file) < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	int rc = -1;
	if (argc >= 7 && !strcmp(argv[1], "synth"))
		rc = synth(argv[2], atol(argv[3]), atoi(argv[4]), atoi(argv[5]),
			   strtoull(argv[6], NULL, 10), argc > 7 && !strcmp(argv[7], "u8"));
	else if (argc == 6 && !strcmp(argv[1], "slice"))
		rc = slice(argv[2], argv[3], atol(argv[4]), atol(argv[5]));
	else if (argc == 4 && !strcmp(argv[1], "bad"))
		rc = bad(argv[2], argv[3]);
	else
		fprintf(stderr, "usage: mkdata synth OUT N D C SEED [u8] | slice IN OUT FIRST COUNT"
				" | bad OUT KIND\n");
	if (rc && user_error_pending())
		fprintf(stderr, "mkdata: %s\n", user_error_text());
	return rc ? 1 : 0;
}
