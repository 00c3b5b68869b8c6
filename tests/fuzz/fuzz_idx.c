/* libFuzzer target: the IDX importer on any image file (gzip or plain),
 * with a fixed small label file. */
#include "dataset.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t labels[10] = {0, 0, 8, 1, 0, 0, 0, 2, 1, 0};
	char images[128], out[128];
	snprintf(images, sizeof(images), "%s", fuzz_file(data, size, ".idx"));
	const char *lab = fuzz_file(labels, sizeof(labels), ".lab");
	snprintf(out, sizeof(out), "%s.h5", images);
	dataset_import_idx(images, lab, out);
	unlink(images);
	unlink(lab);
	unlink(out);
	fuzz_reset();
	return 0;
}
