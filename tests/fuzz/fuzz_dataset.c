/* libFuzzer target: the HDF5 data loader (dataset_load, whole and as one
 * rank's slice) and the streamed reader (dataset_open, then rows read by
 * range, by id and for the start-up digest) on any file. */
#include "dataset.h"
#include "fuzz.h"

/* A streamed slice's first rows, a few by id, and the sampled digest. */
static void read_streamed(const struct dataset *d)
{
	enum { ROWS = 4 };
	int rows = d->n < ROWS ? (int)d->n : ROWS;
	float *x = malloc(sizeof(float) * ROWS * (size_t)d->dim);
	int32_t y[ROWS];
	uint32_t ids[ROWS];
	char why[DATASET_WHY_LEN];
	uint64_t digest;
	for (int i = 0; i < rows; i++)
		ids[i] = (uint32_t)(d->n - 1 - i);
	if (x && rows) {
		dataset_read_range(d, 0, rows, x, y, why);
		dataset_read_rows(d, ids, rows, x, y, why);
	}
	dataset_digest(d, 7, 8, &digest, why);
	free(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size, ".h5");
	for (int part = 0; part < 2; part++) {
		struct dataset d;
		if (dataset_load(&d, path, part, 2) == 0) {
			dataset_check_labels(&d, d.classes, "fuzz");
			dataset_free(&d);
		}
		fuzz_reset();
		if (dataset_open(&d, path, part, 2) == 0) {
			read_streamed(&d);
			dataset_free(&d);
		}
		fuzz_reset();
	}
	unlink(path);
	return 0;
}
