/* The model description of layer_spec.h. */
#include "layer_spec.h"
#include "log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAYER_NAME(id, name, ...) name,
#define ACT_NAME(id, name) name,
const char *const layer_names[] = {LAYER_KINDS(LAYER_NAME) ACT_KINDS(ACT_NAME) NULL};
#undef LAYER_NAME
#define LAYER_ARGS(id, name, lo, hi, usage) {lo, hi},
#define ACT_ARGS(id, name) {0, 0},
static const int layer_args[][2] = {LAYER_KINDS(LAYER_ARGS) ACT_KINDS(ACT_ARGS)};
#undef LAYER_ARGS
#undef ACT_ARGS
/* What each kind's arguments are, for error lines. */
#define LAYER_USAGE(id, name, lo, hi, usage) usage,
static const char *const layer_usage[] = {LAYER_KINDS(LAYER_USAGE) ACT_KINDS(ACT_NAME)};
#undef LAYER_USAGE
#undef ACT_NAME

_Static_assert(sizeof(layer_names) / sizeof(*layer_names) == LAYER_KIND_COUNT + 1,
	       "a name for every layer kind");
_Static_assert(sizeof(layer_args) / sizeof(*layer_args) == LAYER_KIND_COUNT,
	       "arguments for every layer kind");
_Static_assert(sizeof(layer_usage) / sizeof(*layer_usage) == LAYER_KIND_COUNT,
	       "a usage for every layer kind");

/* An integer argument in [1, hi]: 0, or -1. */
static int int_arg(const char *s, int hi, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < 1 || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

/* One layer's text (NUL-terminated, at most 63 bytes): 0, or -1 with why. */
static int parse_one(char *text, struct layer_spec *s, const char **why)
{
	char *arg[8] = {0};
	int n = 0;
	for (char *p = text, *colon; n < 8; p = colon + 1) {
		arg[n++] = p;
		if (!(colon = strchr(p, ':')))
			break;
		*colon = 0;
	}
	int kind = kind_parse(layer_names, arg[0]);
	memset(s, 0, sizeof(*s));
	if (kind < 0)
		return *why = "a layer kind", -1;
	s->kind = (enum layer_kind)kind;
	int args = n - 1;
	*why = layer_usage[kind];
	if (args < layer_args[kind][0] || args > layer_args[kind][1])
		return -1;
	switch (s->kind) {
	case LAYER_DENSE:
		return args && int_arg(arg[1], LAYER_UNITS_MAX, &s->units) ? -1 : 0;
	case LAYER_CONV2D:
		s->stride = 1;
		s->same = 1;
		if (int_arg(arg[1], LAYER_UNITS_MAX, &s->units) || int_arg(arg[2], 64, &s->size) ||
		    (args > 2 && int_arg(arg[3], 64, &s->stride)))
			return -1;
		if (args > 3 && strcmp(arg[4], "same") && strcmp(arg[4], "valid"))
			return -1;
		s->same = args < 4 || !strcmp(arg[4], "same");
		return 0;
	case LAYER_MAXPOOL2D:
	case LAYER_AVGPOOL2D:
		if (int_arg(arg[1], 64, &s->size))
			return -1;
		s->stride = s->size;
		return args > 1 && int_arg(arg[2], 64, &s->stride) ? -1 : 0;
	case LAYER_DROPOUT: {
		char *end;
		errno = 0;
		double r = strtod(arg[1], &end);
		if (!*arg[1] || *end || errno || !(r >= 0.0 && r < 1.0))
			return *why = "dropout:RATE with 0 <= RATE < 1", -1;
		s->rate = (float)r;
		return 0;
	}
	default: return 0;
	}
}

int layer_spec_parse(const char *desc, const char *what, struct layer_spec *spec, int max,
		     int *n)
{
	*n = 0;
	const char *p = desc;
	for (int i = 1;; i++) {
		size_t len = strcspn(p, ",");
		char text[64];
		const char *why = NULL;
		if (!len)
			why = "a layer (an empty one, or a stray comma)";
		else if (len >= sizeof(text))
			why = "a layer of fewer than 64 characters";
		else if (*n == max)
			return user_error("%s: layer %d: more than %d layers", what, i, max);
		if (!why) {
			memcpy(text, p, len);
			text[len] = 0;
			if (!parse_one(text, &spec[*n], &why)) {
				(*n)++;
				why = NULL;
			}
		}
		if (why) {
			char shown[64];
			snprintf(shown, sizeof(shown), "%.*s", (int)(len < 40 ? len : 40), p);
			return user_error("%s: layer %d '%s' (character %d): expected %s", what, i,
					  shown, (int)(p - desc) + 1, why);
		}
		if (!p[len])
			break;
		p += len + 1;
	}
	return 0;
}

int layer_spec_mlp(const int *hidden, int n_hidden, enum act_kind act, struct layer_spec *spec,
		   int max)
{
	int n = 0;
	for (int i = 0; i < n_hidden && n + 3 <= max; i++) {
		spec[n++] = (struct layer_spec){.kind = LAYER_DENSE, .units = hidden[i]};
		spec[n++] = (struct layer_spec){.kind = LAYER_OF_ACT(act)};
	}
	spec[n++] = (struct layer_spec){.kind = LAYER_DENSE};
	return n;
}

const char *layer_spec_text(const struct layer_spec *spec, int n, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (int i = 0; i < n && used < len; i++) {
		const struct layer_spec *s = &spec[i];
		const char *sep = i ? "," : "";
		const char *name = layer_names[s->kind];
		int w;
		switch (s->kind) {
		case LAYER_DENSE:
			w = s->units ? snprintf(buf + used, len - used, "%s%s:%d", sep, name, s->units)
				     : snprintf(buf + used, len - used, "%s%s", sep, name);
			break;
		case LAYER_CONV2D:
			w = snprintf(buf + used, len - used, "%s%s:%d:%d:%d:%s", sep, name, s->units,
				     s->size, s->stride, s->same ? "same" : "valid");
			break;
		case LAYER_MAXPOOL2D:
		case LAYER_AVGPOOL2D:
			w = snprintf(buf + used, len - used, "%s%s:%d:%d", sep, name, s->size, s->stride);
			break;
		case LAYER_DROPOUT:
			w = snprintf(buf + used, len - used, "%s%s:%g", sep, name, (double)s->rate);
			break;
		default: w = snprintf(buf + used, len - used, "%s%s", sep, name); break;
		}
		used += w > 0 ? (size_t)w : 0;
	}
	return buf;
}

int layer_spec_act(const struct layer_spec *s)
{
	return s->kind >= LAYER_ACT && s->kind < LAYER_KIND_COUNT ? (int)(s->kind - LAYER_ACT) : -1;
}
