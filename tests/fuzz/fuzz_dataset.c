/* libFuzzer target: the HDF5 data loader (dataset_load, whole and as one
 * rank's slice) on any file. */
#include "dataset.h"
#include "fuzz.h"

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
	}
	unlink(path);
	return 0;
}
