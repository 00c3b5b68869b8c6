/* libFuzzer target: the --config parser (config_parse_text) on any text. */
#include "config.h"
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = 0;
	struct config cfg;
	config_defaults(&cfg);
	if (config_parse_text(&cfg, text, "fuzz.conf") == 0)
		config_validate(&cfg);
	free(config_to_text(&cfg));
	free(text);
	fuzz_reset();
	return 0;
}
