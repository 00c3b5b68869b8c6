/* The configuration as text (config.h): "key = value" lines for
 * checkpoints and agreement, their comparison, and --help. */
#include "check.h"
#include "options.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void config_hidden_text(const struct config *cfg, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (int i = 0; i < cfg->n_hidden && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%d", i ? "," : "", cfg->hidden[i]);
}

const char *config_float_text(float f, char *buf, size_t len)
{
	char e[32];
	int digits = 1;
	if (!isfinite(f) || f == 0.0f) {
		snprintf(buf, len, "%g", (double)f);
		return buf;
	}
	/* Fewest significant digits first; FLT_DECIMAL_DIG (9) always reads
	 * back. Read as set_option reads a value: strtod, then to float. */
	for (;; digits++) {
		snprintf(e, sizeof(e), "%.*e", digits - 1, (double)f);
		if (digits == FLT_DECIMAL_DIG || (float)strtod(e, NULL) == f)
			break;
	}
	char *mark = strchr(e, 'e');
	int exp = atoi(mark + 1);
	/* The same digits, rounded at the same place: written out from 1e-4 to
	 * below 1e7 (as %g does), else with an exponent of no '+' or leading
	 * zero ("1e-8", "3e38"). */
	if (exp >= -4 && exp < 7)
		snprintf(buf, len, "%.*f", digits - 1 > exp ? digits - 1 - exp : 0, (double)f);
	else
		snprintf(buf, len, "%.*se%d", (int)(mark - e), e, exp);
	return buf;
}

/* o's value in cfg as text: a float as "%.9g" (stored), or with shortest
 * as a user writes it (--help's defaults). The stored configuration keeps
 * "%.9g", the text every checkpoint so far holds, so that a run writes
 * the same file it always did and an older mtrain reads it unchanged. */
static void write_value(const struct config *cfg, const struct option_def *o, FILE *f,
			int shortest)
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
		if (o->per_optim && *(const float *)base < 0.0f)
			fputs(OPT_OPTIM_DEFAULT, f);
		else
			fputs(shortest ? config_float_text(*(const float *)base, buf, sizeof(buf))
				       : (snprintf(buf, sizeof(buf), "%.9g", *(const float *)base), buf),
			      f);
		break;
	}
}

void config_write(const struct config *cfg, FILE *f)
{
	for (size_t i = 0; i < n_options; i++) {
		if (options[i].flags & OPT_NOT_STORED)
			continue;
		fprintf(f, "%s = ", options[i].name);
		write_value(cfg, &options[i], f, 0);
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

/* The key of line ("key = value") into key. */
static void key_of(const char *line, char *key, size_t len)
{
	snprintf(key, len, "%.*s", (int)strcspn(line, " ="), line);
}

/* Whether option key has a flag of mask (an unknown key has none). */
static int key_flagged(const char *key, unsigned mask)
{
	const struct option_def *o = config_find_option(key);
	return o && (o->flags & mask);
}

/* The line of text whose key is key, into buf: 1, or 0 when there is none. */
static int find_key(const char *text, const char *key, char *buf, size_t len)
{
	char k[64];
	while (next_line(&text, buf, len)) {
		key_of(buf, k, sizeof(k));
		if (!strcmp(k, key))
			return 1;
	}
	return 0;
}

/* The value of line ("key = value") of text (NaN if it is none), with 'default' resolved to the
 * default of the optimizer text names when key is such a hyper-parameter. */
static double resolved_value(const char *text, const char *line, const char *key)
{
	const struct option_def *o = config_find_option(key);
	const char *v = strchr(line, '=');
	v = v ? v + 1 + strspn(v + 1, " ") : "";
	if (!o || !o->per_optim || (strcmp(v, OPT_OPTIM_DEFAULT) && strcmp(v, "-1"))) {
		char *end;
		double d = strtod(v, &end);
		return *v && !*end ? d : NAN; /* not a number: equal to nothing */
	}
	char optim[64];
	int kind = find_key(text, "optimizer", optim, sizeof(optim))
			   ? kind_parse(optim_names, optim + strlen("optimizer = ")) : -1;
	return kind < 0 ? -1.0 : (double)optim_defaults[kind][o->per_optim];
}

/* Whether lines a (of text ta) and b (of tb), both for key, say the same:
 * equal, or for a number the same float ("lr = 0.00100000005", as mtrain
 * wrote it before config_float_text, and "lr = 0.001"; 'default' and the
 * value it stands for: a checkpoint written before --beta1 took 'default'
 * says "beta1 = 0.899999976"). */
static int same_line(const char *ta, const char *a, const char *tb, const char *b,
		     const char *key)
{
	const struct option_def *o = config_find_option(key);
	if (!strcmp(a, b))
		return 1;
	return o && o->type == T_FLOAT &&
	       (float)resolved_value(ta, a, key) == (float)resolved_value(tb, b, key);
}

/* Whether line ("key = value") gives option key its default value. */
static int is_default_line(const char *line, const char *key)
{
	const struct option_def *o = config_find_option(key);
	if (!o)
		return 0;
	struct config def;
	config_defaults(&def);
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	ALLOC_CHECK(f);
	fprintf(f, "%s = ", key);
	write_value(&def, o, f, 0);
	fclose(f);
	int same = !strcmp(line, text);
	free(text);
	return same;
}

/* The first key of text a whose line differs from b's (or that b lacks),
 * skipping keys flagged skip and keys b lacks whose line in a is the
 * option's default: 1 with both lines ("(nothing)" for the missing one) in line_a and line_b; 0 when there is none. */
static int first_difference(const char *a, const char *b, unsigned skip, char *line_a,
			    char *line_b, size_t len)
{
	char k[64];
	const char *text_a = a;
	while (next_line(&a, line_a, len)) {
		key_of(line_a, k, sizeof(k));
		if (key_flagged(k, skip))
			continue;
		if (!find_key(b, k, line_b, len)) {
			/* b is from before the option existed: it ran with the default. */
			if (is_default_line(line_a, k))
				continue;
			snprintf(line_b, len, "(nothing)");
			return 1;
		}
		if (!same_line(text_a, line_a, b, line_b, k))
			return 1;
	}
	return 0;
}

int config_diff(const char *a, const char *b, unsigned skip, char *line_a, char *line_b,
		size_t len)
{
	/* Keys in a's order, then those only b has (options of another mtrain
	 * version compare by key, wherever they stand). */
	return first_difference(a, b, skip, line_a, line_b, len) ||
	       first_difference(b, a, skip, line_b, line_a, len);
}

/* " [default: 0.999; lion 0.99]": the value most optimizers' rows give the
 * hyper-parameter which, then the optimizers that differ. */
static void print_optim_defaults(FILE *f, enum optim_hp_id which)
{
	float common = optim_defaults[0][which];
	int most = 0;
	for (int i = 0; optim_names[i]; i++) {
		int same = 0;
		for (int j = 0; optim_names[j]; j++)
			same += optim_defaults[j][which] == optim_defaults[i][which];
		if (same > most) {
			most = same;
			common = optim_defaults[i][which];
		}
	}
	char buf[32];
	fprintf(f, " [default: %s", config_float_text(common, buf, sizeof(buf)));
	for (int i = 0, first = 1; optim_names[i]; i++)
		if (optim_defaults[i][which] != common) {
			fprintf(f, "%s %s %s", first ? ";" : ",", optim_names[i],
				config_float_text(optim_defaults[i][which], buf, sizeof(buf)));
			first = 0;
		}
	fputc(']', f);
}

void config_print_help(FILE *f)
{
	struct config def;
	config_defaults(&def);
	for (size_t i = 0; i < n_options; i++) {
		const struct option_def *o = &options[i];
		char flag[64], list[128];
		const char *meta = o->meta ? o->meta
				   : o->type == T_ENUM ? kind_choices(o->names, list, sizeof(list))
				   : o->type == T_STR ? "PATH"
				   : o->type == T_BOOL ? "on|off"
				   : o->type == T_LIST ? "W,W,..."
				   : o->per_optim ? "X|" OPT_OPTIM_DEFAULT
				   : o->type == T_FLOAT ? "X" : "N";
		snprintf(flag, sizeof(flag), "--%s %s", o->name, meta);
		fprintf(f, "  %-34s %s", flag, o->help);
		if (o->per_optim) {
			print_optim_defaults(f, o->per_optim);
		} else if (o->type != T_STR || ((const char *)&def + o->offset)[0]) {
			fputs(" [default: ", f);
			write_value(&def, o, f, 1);
			fputc(']', f);
		}
		fputc('\n', f);
	}
}
