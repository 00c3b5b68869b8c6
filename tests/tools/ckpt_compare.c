/* Compares checkpoints by logical name, or checks a checkpoint's names.
 *
 *   ckpt_compare A B [RTOL]   same variables; RTOL absent: bitwise equal
 *                             values, else max |a-b| / max(|a|,|b|,1e-3) <= RTOL;
 *                             a NaN or infinity anywhere is a difference
 *   ckpt_compare --norm A B RTOL [FLOOR]   normwise per variable: max |a-b| /
 *                             max(|a|, |b|, FLOOR) over all its values <= RTOL
 *                             (the GPU tests' measure: a value near 0 is judged
 *                             against its variable's scale, not its own; FLOOR,
 *                             default 0, judges a variable of values all below it
 *                             at RTOL * FLOOR absolute: a bias right before a
 *                             batch norm, whose gradient is 0 up to rounding)
 *   ckpt_compare --names A    Keras-style names (dense, conv2d and
 *                             batch_normalization layers), exactly one
 *                             ExponentialMovingAverage shadow per trainable
 *                             variable, none for the non-trainable moving
 *                             statistics, exactly one moving_mean and
 *                             moving_variance per batch-norm layer, no
 *                             replica index anywhere
 *   ckpt_compare --ema-step A B DECAY   B is one step after A: every shadow
 *                             of B is A's moved by TF's rule with B's global
 *                             step t (completed updates) and B's variables,
 *                             shadow - (1 - d)(shadow - w), d = min(DECAY,
 *                             (1 + t) / (10 + t)), to 1e-6 relative
 * Exit status 0 when the check holds, 1 otherwise (reasons on stderr). */
#include "ckpt.h"
#include "kinds.h"
#include "log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct ckpt_var *find(const struct ckpt_var *v, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

/* How compare measures a difference. */
enum measure { BITWISE, ELEMENTWISE, NORMWISE };

static int compare(const char *pa, const char *pb, double rtol, enum measure how, double floor_)
{
	int exact = how == BITWISE;
	struct ckpt_var *a, *b;
	struct ckpt_meta ma, mb;
	int na, nb, bad = 0;
	if (ckpt_read_all(pa, &a, &na, &ma) || ckpt_read_all(pb, &b, &nb, &mb)) {
		fprintf(stderr, "ckpt_compare: %s\n", user_error_text());
		return 1;
	}
	if (na != nb) {
		fprintf(stderr, "%d variables in %s, %d in %s\n", na, pa, nb, pb);
		bad = 1;
	}
	if (ma.global_step != mb.global_step || ma.epoch != mb.epoch ||
	    ma.step_in_epoch != mb.step_in_epoch) {
		fprintf(stderr, "positions differ: step %ld epoch %ld+%ld vs step %ld epoch %ld+%ld\n",
			ma.global_step, ma.epoch, ma.step_in_epoch, mb.global_step, mb.epoch,
			mb.step_in_epoch);
		bad = 1;
	}
	for (int i = 0; i < na; i++) {
		const struct ckpt_var *vb = find(b, nb, a[i].name);
		if (!vb || vb->ndim != a[i].ndim ||
		    memcmp(vb->shape, a[i].shape, sizeof(vb->shape))) {
			fprintf(stderr, "%s: missing or reshaped in %s\n", a[i].name, pb);
			bad = 1;
			continue;
		}
		double worst = 0, diff = 0, size = 0;
		size_t n = ckpt_var_cells(&a[i]), not_finite = 0;
		if (exact && memcmp(a[i].data, vb->data, n * sizeof(float)))
			worst = INFINITY;
		for (size_t k = 0; k < n; k++) {
			double x = a[i].data[k], y = vb->data[k];
			if (!isfinite(x) || !isfinite(y)) {
				not_finite++;
				continue;
			}
			double scale = fmax(fmax(fabs(x), fabs(y)), 1e-3);
			if (how == ELEMENTWISE)
				worst = fmax(worst, fabs(x - y) / scale);
			diff = fmax(diff, fabs(x - y));
			size = fmax(size, fmax(fabs(x), fabs(y)));
		}
		if (how == NORMWISE)
			worst = fmax(size, floor_) > 0 ? diff / fmax(size, floor_) : diff;
		/* A diverged run is never "the same" as anything, itself included. */
		if (not_finite) {
			fprintf(stderr, "%s: %zu values are NaN or infinite\n", a[i].name, not_finite);
			bad = 1;
		} else if (worst > rtol) {
			fprintf(stderr, "%s: differs (%s %g)\n", a[i].name,
				exact ? "not bitwise equal"
				      : how == NORMWISE ? "normwise relative difference"
							: "max relative difference",
				worst);
			bad = 1;
		}
	}
	printf("%s vs %s: %d variables, %s\n", pa, pb, na, bad ? "DIFFERENT" : "equal");
	ckpt_free_vars(a, na);
	ckpt_free_vars(b, nb);
	ckpt_meta_free(&ma);
	ckpt_meta_free(&mb);
	return bad;
}

/* Whether name is "<var>/<suffix>" of an EMA shadow or of any optimizer's
 * slot (kinds.h's OPTIM_KINDS, so a new optimizer needs nothing here). */
static int is_slot(const char *name)
{
#define SLOT_SUFFIXES(id, optim, slots, s1, s2, ...) s1, s2,
	static const char *suffix[] = {"ExponentialMovingAverage", OPTIM_KINDS(SLOT_SUFFIXES)};
#undef SLOT_SUFFIXES
	for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		size_t ls = suffix[i] ? strlen(suffix[i]) : 0, ln = strlen(name);
		if (ls && ln > ls + 1 && name[ln - ls - 1] == '/' && !strcmp(name + ln - ls, suffix[i]))
			return 1;
	}
	return 0;
}

/* The canonical variables: the Keras layer name (before any _K) and the
 * variable, and whether it is trainable. */
static const struct {
	const char *layer, *var;
	int trainable;
} canonical[] = {
	{"dense", "kernel", 1},
	{"dense", "bias", 1},
	{"conv2d", "kernel", 1},
	{"conv2d", "bias", 1},
	{"batch_normalization", "gamma", 1},
	{"batch_normalization", "beta", 1},
	{"batch_normalization", "moving_mean", 0},
	{"batch_normalization", "moving_variance", 0},
	{"layer_normalization", "gamma", 1},
	{"layer_normalization", "beta", 1},
	{"multi_head_attention", "query/kernel", 1},
	{"multi_head_attention", "query/bias", 1},
	{"multi_head_attention", "key/kernel", 1},
	{"multi_head_attention", "key/bias", 1},
	{"multi_head_attention", "value/kernel", 1},
	{"multi_head_attention", "value/bias", 1},
	{"multi_head_attention", "attention_output/kernel", 1},
	{"multi_head_attention", "attention_output/bias", 1},
	{"embedding", "embeddings", 1},
	{"position_embedding", "embeddings", 1},
};

/* The canonical entry name is, or -1: "<layer>[_K]/<var>". */
static int canonical_of(const char *name)
{
	char layer[64], var[64];
	if (sscanf(name, "%63[^/]/%63s", layer, var) != 2)
		return -1;
	for (size_t i = 0; i < sizeof(canonical) / sizeof(canonical[0]); i++) {
		size_t len = strlen(canonical[i].layer);
		const char *k = layer + len;
		if (strncmp(layer, canonical[i].layer, len) || strcmp(var, canonical[i].var))
			continue;
		if (!*k || (k[0] == '_' && k[1] && strspn(k + 1, "0123456789") == strlen(k + 1)))
			return (int)i;
	}
	return -1;
}

/* How many of v are called "<prefix><suffix>". */
static int count_named(const struct ckpt_var *v, int n, const char *prefix, const char *suffix)
{
	char want[CKPT_NAME_LEN + 32];
	snprintf(want, sizeof(want), "%s%s", prefix, suffix);
	int found = 0;
	for (int j = 0; j < n; j++)
		found += !strcmp(v[j].name, want);
	return found;
}

static int check_names(const char *path)
{
	struct ckpt_var *v;
	struct ckpt_meta m;
	int n, bad = 0, trainable = 0, shadows = 0, moving = 0;
	if (ckpt_read_all(path, &v, &n, &m)) {
		fprintf(stderr, "ckpt_compare: %s\n", user_error_text());
		return 1;
	}
	for (int i = 0; i < n; i++) {
		const char *name = v[i].name;
		char layer[64];
		if (strstr(name, "replica")) {
			fprintf(stderr, "%s: name carries a replica index\n", name);
			bad = 1;
		}
		if (is_slot(name)) {
			shadows += strstr(name, "/ExponentialMovingAverage") != NULL;
			continue;
		}
		int c = canonical_of(name);
		if (c < 0) {
			fprintf(stderr, "%s: not a canonical variable name\n", name);
			bad = 1;
			continue;
		}
		int found = count_named(v, n, name, "/ExponentialMovingAverage");
		if (!canonical[c].trainable) {
			/* moving statistics: no shadow, no slots (is_slot above
			 * counted a stray shadow; this names it) */
			moving++;
			if (found || count_named(v, n, name, "/Adam") ||
			    count_named(v, n, name, "/Momentum")) {
				fprintf(stderr, "%s: a non-trainable variable with a shadow or slot\n",
					name);
				bad = 1;
			}
			continue;
		}
		trainable++;
		if (found != 1) {
			fprintf(stderr, "%s: %d shadows named %s/ExponentialMovingAverage\n", name,
				found, name);
			bad = 1;
		}
		/* A batch-norm layer: one moving mean and one moving variance. */
		if (!strcmp(canonical[c].layer, "batch_normalization") &&
		    !strcmp(canonical[c].var, "gamma")) {
			snprintf(layer, sizeof(layer), "%.*s", (int)(strchr(name, '/') - name), name);
			if (count_named(v, n, layer, "/moving_mean") != 1 ||
			    count_named(v, n, layer, "/moving_variance") != 1) {
				fprintf(stderr, "%s: not exactly one moving_mean and moving_variance\n",
					layer);
				bad = 1;
			}
		}
	}
	if (shadows != trainable) {
		fprintf(stderr, "%d shadows for %d trainable variables\n", shadows, trainable);
		bad = 1;
	}
	printf("%s: %d trainable variables, %d shadows, %d moving statistics, names %s\n", path,
	       trainable, shadows, moving, bad ? "WRONG" : "canonical");
	ckpt_free_vars(v, n);
	ckpt_meta_free(&m);
	return bad || trainable == 0;
}

/* The EMA rule written out again here, from TF's documentation, so the
 * test does not take mtrain's word for it. */
static int check_ema_step(const char *pa, const char *pb, double decay)
{
	struct ckpt_var *a, *b;
	struct ckpt_meta ma, mb;
	int na, nb, bad = 0, shadows = 0;
	if (ckpt_read_all(pa, &a, &na, &ma) || ckpt_read_all(pb, &b, &nb, &mb)) {
		fprintf(stderr, "ckpt_compare: %s\n", user_error_text());
		return 1;
	}
	long t = mb.global_step;
	float rule = (float)(1.0 + (double)t) / (float)(10.0 + (double)t);
	float d = rule < (float)decay ? rule : (float)decay;
	const char *suffix = "/ExponentialMovingAverage";
	for (int i = 0; i < nb; i++) {
		const char *s = strstr(b[i].name, suffix);
		if (!s || s[strlen(suffix)])
			continue;
		char var[CKPT_NAME_LEN];
		snprintf(var, sizeof(var), "%.*s", (int)(s - b[i].name), b[i].name);
		const struct ckpt_var *sa = find(a, na, b[i].name), *wb = find(b, nb, var);
		if (!sa || !wb || ckpt_var_cells(sa) != ckpt_var_cells(&b[i])) {
			fprintf(stderr, "%s: missing in %s\n", b[i].name, sa ? pb : pa);
			bad = 1;
			continue;
		}
		shadows++;
		for (size_t k = 0; k < ckpt_var_cells(&b[i]); k++) {
			float want = sa->data[k] - (1.0f - d) * (sa->data[k] - wb->data[k]);
			double err = fabs((double)b[i].data[k] - want) / fmax(fabs(want), 1e-3);
			if (!(err <= 1e-6)) { /* NaN fails too */
				fprintf(stderr, "%s[%zu] = %.9g, want %.9g (d = %.9g at step %ld)\n",
					b[i].name, k, b[i].data[k], want, d, t);
				bad = 1;
				break;
			}
		}
	}
	printf("%s -> %s: %d shadows, step %ld, d %.6f: %s\n", pa, pb, shadows, t, d,
	       bad ? "WRONG" : "as TF's rule");
	ckpt_free_vars(a, na);
	ckpt_free_vars(b, nb);
	ckpt_meta_free(&ma);
	ckpt_meta_free(&mb);
	return bad || shadows == 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "--ema-step"))
		return check_ema_step(argv[2], argv[3], atof(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "--names"))
		return check_names(argv[2]);
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "--norm"))
		return compare(argv[2], argv[3], atof(argv[4]), NORMWISE,
			       argc == 6 ? atof(argv[5]) : 0.0);
	if (argc == 3 || argc == 4)
		return compare(argv[1], argv[2], argc == 4 ? atof(argv[3]) : 0.0,
			       argc == 3 ? BITWISE : ELEMENTWISE, 0.0);
	fprintf(stderr, "usage: ckpt_compare A B [RTOL] | --norm A B RTOL [FLOOR] | --names A | "
			"--ema-step A B DECAY\n");
	return 2;
}
