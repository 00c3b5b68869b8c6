/* The option table behind config.h, shared by its two files: config.c
 * (defaults, parsing, validation) and config_text.c (the configuration as
 * text, its comparison, --help). Not for other modules. */
#pragma once
#include <stddef.h>

#include "config.h"

enum opt_type { T_STR, T_INT, T_LONG, T_FLOAT, T_U64, T_BOOL, T_ENUM, T_LIST };

struct option_def {
	const char *name; /* flag without "--", and config key */
	enum opt_type type;
	size_t offset;
	double min, max;          /* numeric range, inclusive */
	const char *const *names; /* T_ENUM: the kind's names (kinds.h) */
	const char *unset;        /* T_FLOAT: the word for "unset" (stored as -1),
				   * e.g. "default" */
	unsigned flags;           /* OPT_* */
	const char *help;
	const char *meta;         /* the value's placeholder in --help when not
				   * the type's ("PATH", "N", ...), e.g. "A:B" */
};

extern const struct option_def options[];
extern const size_t n_options;

/* The option called name (a flag without "--", or a config key), or NULL. */
const struct option_def *config_find_option(const char *name);
