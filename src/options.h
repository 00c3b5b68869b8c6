/* The option table behind config.h, shared by its two files: config.c
 * (the table, with each option's default; parsing, validation) and
 * config_text.c (the configuration as text, its comparison, --help). Not for
 * other modules. */
#pragma once
#include <stddef.h>

#include "config.h"

enum opt_type { T_STR, T_INT, T_LONG, T_FLOAT, T_U64, T_BOOL, T_ENUM, T_LIST };

/* The value of an option whose default is the optimizer's (per_optim): it
 * is stored as -1 and optim.c resolves it. */
#define OPT_OPTIM_DEFAULT "default"

struct option_def {
	const char *name; /* flag without "--", and config key */
	enum opt_type type;
	size_t offset;
	const char *def;          /* the default, written as a flag's value, e.g.
				   * "0.001", "256,256", "adam"; NULL: 0 or "" */
	double min, max;          /* numeric range, inclusive */
	const char *const *names; /* T_ENUM: the kind's names (kinds.h) */
	enum optim_hp_id per_optim; /* T_FLOAT: OPTIM_HP_* when the optimizer's
				   * OPTIM_KINDS row gives the default; it then
				   * takes the value OPT_OPTIM_DEFAULT */
	unsigned flags;           /* OPT_* */
	const char *help;
	const char *meta;         /* the value's placeholder in --help when not
				   * the type's ("PATH", "N", ...), e.g. "A:B" */
};

extern const struct option_def options[];
extern const size_t n_options;

/* The option called name (a flag without "--", or a config key), or NULL. */
const struct option_def *config_find_option(const char *name);
