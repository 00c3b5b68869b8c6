/* libFuzzer target: the checkpoint readers (ckpt_read against a small
 * model's variables, and inspect in both forms) on any file. */
#include "ckpt.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size, ".h5");
	static float k[12 * 16], b[16];
	struct ckpt_var vars[2] = {{"dense/kernel", 2, {12, 16}, k}, {"dense/bias", 1, {16, 0}, b}};
	struct ckpt_meta m;
	if (ckpt_read(path, vars, 2, 1, &m) == 0)
		ckpt_meta_free(&m);
	fuzz_reset();
	FILE *sink = fopen("/dev/null", "w");
	ckpt_inspect(path, 0, sink);
	fuzz_reset();
	ckpt_inspect(path, 1, sink);
	fuzz_reset();
	fclose(sink);
	unlink(path);
	return 0;
}
