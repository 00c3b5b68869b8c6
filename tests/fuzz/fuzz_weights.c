/* libFuzzer target: the --init-from readers of weights_file.h (safetensors,
 * a .keras zip, a Keras .weights.h5, told apart by their first bytes) on
 * any file. */
#include "fuzz.h"
#include "weights_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size, ".weights");
	enum weights_kind kind;
	struct ckpt_var *vars;
	int n;
	if (weights_read(path, &kind, &vars, &n) == 0)
		ckpt_free_vars(vars, n);
	fuzz_reset();
	unlink(path);
	return 0;
}
