/* The configuration as text (config.h): "key = value" lines for
 * checkpoints and agreement, their comparison, and --help. */
#include "check.h"
#include "options.h"

#include <stdlib.h>
#include <string.h>

void config_hidden_text(const struct config *cfg, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (int i = 0; i < cfg->n_hidden && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%d", i ? "," : "", cfg->hidden[i]);
}

static void write_value(const struct config *cfg, const struct option_def *o, FILE *f)
{
	const char *base = (const char *)cfg + o->offset;
	char buf[256];
	switch (o->type) {
	case T_STR: fputs(base, f); break;
	case T_BOOL: fputs(*(const int *)base ? "on" : "off", f); break;
	case T_ENUM: fputs(kind_name(o->names, *(const int *)base), f); break;
	case T_LIST: config_hidden_text(cfg, buf, sizeof(buf)); fputs(buf, f); break;
	case T_U64: fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)base); break;
	case T_INT: fprintf(f, "%d", *(const int *)base); break;
	case T_LONG: fprintf(f, "%ld", *(const long *)base); break;
	case T_FLOAT:
		if (o->unset && *(const float *)base < 0.0f)
			fputs(o->unset, f);
		else
			fprintf(f, "%.9g", *(const float *)base);
		break;
	}
}

void config_write(const struct config *cfg, FILE *f)
{
	for (size_t i = 0; i < n_options; i++) {
		if (options[i].flags & OPT_NOT_STORED)
			continue;
		fprintf(f, "%s = ", options[i].name);
		write_value(cfg, &options[i], f);
		fputc('\n', f);
	}
}

char *config_to_text(const struct config *cfg)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ALLOC_CHECK(f);
	config_write(cfg, f);
	fclose(f);
	return text;
}

/* The next line of *p (advancing it), without its newline, into buf. */
static int next_line(const char **p, char *buf, size_t len)
{
	if (!**p)
		return 0;
	size_t n = strcspn(*p, "\n");
	snprintf(buf, len, "%.*s", (int)n, *p);
	*p += n + ((*p)[n] == '\n');
	return 1;
}

/* Whether the option of line ("key = value") has a flag of mask. */
static int line_flagged(const char *line, unsigned mask)
{
	char key[64];
	snprintf(key, sizeof(key), "%.*s", (int)strcspn(line, " ="), line);
	const struct option_def *o = config_find_option(key);
	return o && (o->flags & mask);
}

int config_diff(const char *a, const char *b, unsigned skip, char *line_a, char *line_b,
		size_t len)
{
	for (;;) {
		int more_a = next_line(&a, line_a, len), more_b = next_line(&b, line_b, len);
		if (!more_a && !more_b)
			return 0;
		if (!more_a || !more_b || strcmp(line_a, line_b)) {
			if (more_a && more_b && line_flagged(line_a, skip) &&
			    line_flagged(line_b, skip))
				continue;
			if (!more_a)
				snprintf(line_a, len, "(nothing)");
			if (!more_b)
				snprintf(line_b, len, "(nothing)");
			return 1;
		}
	}
}

void config_print_help(FILE *f)
{
	struct config def;
	config_defaults(&def);
	for (size_t i = 0; i < n_options; i++) {
		const struct option_def *o = &options[i];
		char flag[64], unset[32] = "", list[128];
		int has_unset = o->type == T_FLOAT && o->unset;
		if (has_unset)
			snprintf(unset, sizeof(unset), "X|%s", o->unset);
		const char *meta = o->type == T_ENUM ? kind_choices(o->names, list, sizeof(list))
				   : o->type == T_STR ? "PATH"
				   : o->type == T_BOOL ? "on|off"
				   : o->type == T_LIST ? "W,W,..."
				   : has_unset ? unset
				   : o->type == T_FLOAT ? "X" : "N";
		snprintf(flag, sizeof(flag), "--%s %s", o->name, meta);
		fprintf(f, "  %-34s %s", flag, o->help);
		/* An option with an "unset" word says its defaults in its help. */
		if (!has_unset && (o->type != T_STR || ((const char *)&def + o->offset)[0])) {
			fputs(" [default: ", f);
			write_value(&def, o, f);
			fputc(']', f);
		}
		fputc('\n', f);
	}
}
