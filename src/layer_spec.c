/* The model description of layer_spec.h. */
#include "layer_spec.h"
#include "check.h"
#include "log.h"

#include <ctype.h>
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

/* A rate in [0, 1): 0, or -1. */
static int rate_arg(const char *s, float *out)
{
	char *end;
	errno = 0;
	double r = strtod(s, &end);
	if (!*s || *end || errno || !(r >= 0.0 && r < 1.0))
		return -1;
	*out = (float)r;
	return 0;
}

/* Other frameworks' words for these layers (Keras' classes, PyTorch's
 * modules), for "did you mean"; compared as kind_near does. */
static const char *const layer_aliases[][2] = {
	{"linear", "dense"}, {"fc", "dense"}, {"maxpooling2d", "maxpool2d"},
	{"averagepooling2d", "avgpool2d"}, {"globalaveragepooling2d", "globalavgpool"},
	{"adaptiveavgpool2d", "globalavgpool"}, {"batchnormalization", "batchnorm"},
	{"bn", "batchnorm"}, {"swish", "silu"}, {"layernormalization", "layernorm"},
	{"ln", "layernorm"}, {"multiheadattention", "attention"}, {"mha", "attention"},
	{"selfattention", "attention"}, {"positionembedding", "posembed"},
	{"reshape", "tokens"}, {"patches", "tokens"}, {"reverseembedding", "unembed"},
	{"tiedembedding", "unembed"},
};

/* One layer's text (NUL-terminated, at most 63 bytes; its colons become
 * NULs, so text is then its kind's word): 0, or -1 with why (NULL: the
 * word is no kind's). */
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
		return *why = NULL, -1;
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
	case LAYER_DROPOUT:
		if (rate_arg(arg[1], &s->rate))
			return *why = "dropout:RATE with 0 <= RATE < 1", -1;
		return 0;
	case LAYER_LAYERNORM: {
		char *end;
		errno = 0;
		double e = args ? strtod(arg[1], &end) : 1e-3;
		if (args && (!*arg[1] || *end || errno || !(e > 0.0 && e < 1.0)))
			return *why = "layernorm[:EPSILON] with 0 < EPSILON < 1", -1;
		s->eps = (float)e;
		return 0;
	}
	case LAYER_ATTENTION:
		if (int_arg(arg[1], LAYER_HEADS_MAX, &s->units))
			return -1;
		for (int a = 2; a <= args; a++) {
			if (!strcmp(arg[a], "causal") && !s->causal && a == 2)
				s->causal = 1;
			else if (a == args && !rate_arg(arg[a], &s->rate))
				;
			else
				return *why = "attention:HEADS[:causal][:DROPOUT] with 0 <= DROPOUT < 1", -1;
		}
		return 0;
	case LAYER_EMBEDDING: return int_arg(arg[1], LAYER_UNITS_MAX, &s->units);
	default: return 0;
	}
}

/* The description being parsed: layers go to spec[0..n), each taking the
 * output of layer cur (-1: the model's input) unless it is an add. */
struct parser {
	const char *desc, *what;
	const char *p;          /* the next character */
	struct layer_spec *spec;
	int max, n, cur;
	int layer;              /* layers written so far (their position) */
	int depth;              /* nested groups and blocks */
};

static int at(const struct parser *ps, const char *p) { return (int)(p - ps->desc) + 1; }

static void skip_space(struct parser *ps)
{
	while (isspace((unsigned char)*ps->p))
		ps->p++;
}

/* Appends s taking input ps->cur (or, for an add, from[] set by the
 * caller): 0, or -1 with a user_error when the model is full. */
static int emit(struct parser *ps, struct layer_spec s, const char *where)
{
	if (ps->n == ps->max)
		return user_error("%s: character %d: more than %d layers (repetitions counted)",
				  ps->what, at(ps, where), ps->max);
	if (s.kind != LAYER_ADD)
		s.from[0] = ps->n - ps->cur, s.from[1] = 0;
	s.at = at(ps, where);
	ps->spec[ps->n] = s;
	ps->cur = ps->n++;
	return 0;
}

/* The user error of word, no kind's, written at start: the nearest kind
 * and the words there are (an add is written as a block, not a word). */
static int unknown_layer(const struct parser *ps, const char *word, const char *start)
{
	struct kind_near k;
	char list[256] = "";
	size_t used = 0;
	kind_near_start(&k, word);
	for (size_t i = 0; i < sizeof(layer_aliases) / sizeof(layer_aliases[0]); i++)
		kind_near_offer(&k, layer_aliases[i][0], layer_aliases[i][1]);
	for (int i = 0; layer_names[i]; i++)
		if (i != LAYER_ADD) {
			kind_near_offer(&k, layer_names[i], layer_names[i]);
			if (used < sizeof(list))
				used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
							 used ? ", " : "", layer_names[i]);
		}
	const char *near = kind_near_answer(&k);
	return user_error("%s: unknown layer '%s' at character %d%s%s%s (layers: %s)", ps->what, word,
			  at(ps, start), near ? "; did you mean '" : "", near ? near : "",
			  near ? "'?" : "", list);
}

/* One layer's text, up to the next ',', '|', ']', ')' or space. */
static int parse_layer(struct parser *ps)
{
	const char *start = ps->p;
	size_t len = strcspn(start, ",|])([* \t\r\n\f\v");
	char text[64];
	const char *why = NULL;
	struct layer_spec s;
	ps->layer++;
	if (!len)
		why = "a layer (an empty one, or a stray comma)";
	else if (len >= sizeof(text))
		why = "a layer of fewer than 64 characters";
	if (!why) {
		memcpy(text, start, len);
		text[len] = 0;
		if (!parse_one(text, &s, &why)) /* an add is written as a block */
			why = s.kind == LAYER_ADD ? layer_usage[LAYER_ADD] : NULL;
		else if (!why)
			return unknown_layer(ps, text, start);
	}
	if (why)
		return user_error("%s: layer %d '%.*s' (character %d): expected %s", ps->what,
				  ps->layer, (int)(len < 40 ? len : 40), start, at(ps, start), why);
	ps->p += len;
	return emit(ps, s, start);
}

static int parse_seq(struct parser *ps);

/* What closes the group or block opened at open ('(' or '['), or -1 with a
 * user_error. */
static int expect_close(struct parser *ps, const char *open, char close)
{
	skip_space(ps);
	if (*ps->p == close) {
		ps->p++;
		return 0;
	}
	if (!*ps->p)
		return user_error("%s: the '%c' at character %d is never closed (expected '%c')",
				  ps->what, *open, at(ps, open), close);
	return user_error("%s: character %d: expected '%c' to close the '%c' at character %d, "
			  "got '%c'", ps->what, at(ps, ps->p), close, *open, at(ps, open), *ps->p);
}

/* [MAIN] or [MAIN|SHORTCUT] at ps->p: the layers of MAIN, those of
 * SHORTCUT, then the add. */
static int parse_block(struct parser *ps)
{
	const char *open = ps->p++;
	int x = ps->cur, n0 = ps->n;
	skip_space(ps);
	if (*ps->p == ']' || *ps->p == '|')
		return user_error("%s: the block at character %d has no layers on its main path",
				  ps->what, at(ps, open));
	if (parse_seq(ps))
		return -1;
	int main_last = ps->cur, other = x, n1 = ps->n;
	skip_space(ps);
	if (*ps->p == '|') {
		const char *bar = ps->p++;
		ps->cur = x;
		skip_space(ps);
		if (*ps->p == ']')
			return user_error("%s: the block at character %d has an empty shortcut after "
					  "the '|' at character %d (write [MAIN] for x + MAIN(x))",
					  ps->what, at(ps, open), at(ps, bar));
		if (parse_seq(ps))
			return -1;
		other = ps->cur;
	}
	if (expect_close(ps, open, ']'))
		return -1;
	struct layer_spec add = {.kind = LAYER_ADD, .units = n1 - n0, .size = ps->n - n1};
	add.from[0] = ps->n - main_last;
	add.from[1] = ps->n - other;
	return emit(ps, add, open);
}

/* One item: a layer, a block, (SEQ), or N*ITEM. */
static int parse_item(struct parser *ps)
{
	skip_space(ps);
	const char *start = ps->p;
	if (isdigit((unsigned char)*start)) {
		char *end;
		errno = 0;
		long times = strtol(start, &end, 10);
		const char *star = end;
		while (isspace((unsigned char)*star))
			star++;
		if (*star == '*') {
			if (errno || times < 1 || times > LAYER_REPEAT_MAX)
				return user_error("%s: character %d: a repetition of %.*s (expected 1 to "
						  "%d times)", ps->what, at(ps, start), (int)(end - start),
						  start, LAYER_REPEAT_MAX);
			ps->p = star + 1;
			skip_space(ps);
			if (*ps->p != '(' && *ps->p != '[')
				return user_error("%s: character %d: expected '(' or '[' after %ld*",
						  ps->what, at(ps, ps->p), times);
			const char *body = ps->p;
			int layer = ps->layer;
			for (long k = 0; k < times; k++) {
				ps->p = body;
				ps->layer = layer; /* each copy's layers counted as written */
				if (parse_item(ps))
					return -1;
			}
			return 0;
		}
	}
	if (*start == '[') {
		if (++ps->depth > 64)
			return user_error("%s: character %d: blocks nested more than 64 deep",
					  ps->what, at(ps, start));
		int rc = parse_block(ps);
		ps->depth--;
		return rc;
	}
	if (*start == '(') {
		ps->p++;
		if (++ps->depth > 64)
			return user_error("%s: character %d: groups nested more than 64 deep",
					  ps->what, at(ps, start));
		int n0 = ps->n;
		if (parse_seq(ps) || expect_close(ps, start, ')'))
			return -1;
		ps->depth--;
		if (ps->n == n0)
			return user_error("%s: the group at character %d is empty", ps->what,
					  at(ps, start));
		return 0;
	}
	if ((*start == ']' || *start == ')' || *start == '|') && !ps->depth)
		return user_error("%s: character %d: '%c' with nothing open before it%s", ps->what,
				  at(ps, start), *start,
				  ps->depth ? "" : " (an unbalanced bracket)");
	return parse_layer(ps);
}

/* ITEM (',' ITEM)*: stops before '|', ']', ')' or the end. */
static int parse_seq(struct parser *ps)
{
	for (;;) {
		if (parse_item(ps))
			return -1;
		skip_space(ps);
		if (!*ps->p || strchr("|])", *ps->p))
			return 0;
		if (*ps->p != ',')
			return user_error("%s: character %d: expected ',' before '%c'", ps->what,
					  at(ps, ps->p), *ps->p);
		ps->p++;
	}
}

int layer_spec_parse(const char *desc, const char *what, struct layer_spec *spec, int max,
		     int *n)
{
	struct parser ps = {.desc = desc, .what = what, .p = desc, .spec = spec, .max = max,
			    .cur = -1};
	*n = 0;
	if (parse_seq(&ps))
		return -1;
	skip_space(&ps);
	if (*ps.p)
		return user_error("%s: character %d: '%c' with nothing open before it (an "
				  "unbalanced bracket)", what, at(&ps, ps.p), *ps.p);
	*n = ps.n;
	return 0;
}

int layer_spec_src(const struct layer_spec *spec, int i, int k)
{
	int back = spec[i].from[k];
	return i - (back > 0 ? back : 1);
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
	/* Where each block opens ('[' before its first layer) and where its
	 * shortcut starts ('|'); its add closes it (']'). */
	unsigned char *opens = calloc((size_t)n + 1, 1), *bar = calloc((size_t)n + 1, 1);
	ALLOC_CHECK(opens && bar);
	for (int k = 0; k < n; k++)
		if (spec[k].kind == LAYER_ADD) {
			opens[k - spec[k].units - spec[k].size]++;
			if (spec[k].size)
				bar[k - spec[k].size] = 1;
		}
	size_t used = 0;
	int first = 1; /* nothing written at this level yet: no comma */
	buf[0] = 0;
	for (int i = 0; i < n && used < len; i++) {
		const struct layer_spec *s = &spec[i];
		const char *sep = first ? "" : ",";
		const char *name = layer_names[s->kind];
		int w = 0;
		if (bar[i]) {
			w = snprintf(buf + used, len - used, "|");
			sep = "";
		} else if (opens[i]) {
			w = snprintf(buf + used, len - used, "%s", sep);
			for (int k = 0; k < opens[i] && w >= 0 && used + (size_t)w + 1 < len; k++)
				buf[used + (size_t)w++] = '[';
			buf[used + (size_t)(w > 0 ? w : 0)] = 0;
			sep = "";
		}
		used += w > 0 ? (size_t)w : 0;
		if (used >= len)
			break;
		first = 0;
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
		case LAYER_LAYERNORM:
			w = snprintf(buf + used, len - used, "%s%s:%g", sep, name, (double)s->eps);
			break;
		case LAYER_ATTENTION:
			w = snprintf(buf + used, len - used, "%s%s:%d%s", sep, name, s->units,
				     s->causal ? ":causal" : "");
			if (w > 0 && s->rate > 0.0f && used + (size_t)w < len)
				w += snprintf(buf + used + w, len - used - (size_t)w, ":%g", (double)s->rate);
			break;
		case LAYER_EMBEDDING:
			w = snprintf(buf + used, len - used, "%s%s:%d", sep, name, s->units);
			break;
		case LAYER_ADD: w = snprintf(buf + used, len - used, "]"); break;
		default: w = snprintf(buf + used, len - used, "%s%s", sep, name); break;
		}
		used += w > 0 ? (size_t)w : 0;
	}
	free(opens);
	free(bar);
	return buf;
}

int layer_spec_act(const struct layer_spec *s)
{
	return s->kind >= LAYER_ACT && s->kind < LAYER_KIND_COUNT ? (int)(s->kind - LAYER_ACT) : -1;
}
