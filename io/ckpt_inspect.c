/* mtrain inspect (ckpt.h): a checkpoint's root attributes and one line of
 * figures per variable, as text or as one JSON object. It reads through
 * ckpt_read_all, in a child process, like every other reader. */
#include "ckpt.h"
#include "ckpt_meta.h"
#include "hash.h"
#include "log.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* One variable's figures for inspect. */
struct var_stats {
	char shape[96];  /* e.g. "[784,256]", "[3,3,1,32]": JSON too */
	uint64_t fnv;    /* FNV-1a 64 of its bytes */
	double min, max, mean;
};

static struct var_stats stats_of(const struct ckpt_var *v)
{
	struct var_stats st = {.min = INFINITY, .max = -INFINITY};
	size_t count = ckpt_var_cells(v);
	double sum = 0;
	for (size_t i = 0; i < count; i++) {
		double x = v->data[i];
		st.min = x < st.min ? x : st.min;
		st.max = x > st.max ? x : st.max;
		sum += x;
	}
	st.mean = count ? sum / (double)count : 0.0;
	st.fnv = fnv1a64(FNV1A64_INIT, v->data, count * sizeof(float));
	shape_text(v->ndim, v->shape, st.shape, sizeof(st.shape));
	return st;
}

static void print_text(FILE *out, const char *path, const struct ckpt_meta *m,
		       const struct ckpt_var *v, int n)
{
	ckpt_meta_print(out, path, m);
	fprintf(out, "%-44s %-12s %-8s %-16s %12s %12s %12s\n", "name", "shape", "dtype",
		"fnv1a64", "min", "max", "mean");
	for (int j = 0; j < n; j++) {
		struct var_stats st = stats_of(&v[j]);
		fprintf(out, "%-44s %-12s %-8s %016llx %12.6g %12.6g %12.6g\n", v[j].name, st.shape,
			"float32", (unsigned long long)st.fnv, st.min, st.max, st.mean);
	}
	int64_t step = m->global_step;
	fprintf(out, "%-44s %-12s %-8s %016llx %12lld %12lld %12lld\n", "global_step", "[1]",
		"int64", (unsigned long long)fnv1a64(FNV1A64_INIT, &step, sizeof(step)),
		(long long)step, (long long)step, (long long)step);
}

/* The same facts as one JSON object, for scripts. */
static void print_json(FILE *out, const char *path, const struct ckpt_meta *m,
		       const struct ckpt_var *v, int n)
{
	fputc('{', out);
	ckpt_meta_print_json(out, path, m);
	fputs("\"variables\":[", out);
	for (int j = 0; j < n; j++) {
		struct var_stats st = stats_of(&v[j]);
		char name[6 * CKPT_NAME_LEN], num[3][32];
		fprintf(out, "%s{\"name\":\"%s\",\"shape\":%s,\"dtype\":\"float32\","
			"\"fnv1a64\":\"%016llx\",\"min\":%s,\"max\":%s,\"mean\":%s}", j ? "," : "",
			json_escape(v[j].name, name, sizeof(name)), st.shape, (unsigned long long)st.fnv,
			json_num(st.min, num[0], 32), json_num(st.max, num[1], 32),
			json_num(st.mean, num[2], 32));
	}
	fputs("]}\n", out);
}

int ckpt_inspect(const char *path, int json, FILE *out)
{
	struct ckpt_var *v;
	struct ckpt_meta m;
	int n;
	if (ckpt_read_all(path, &v, &n, &m))
		return -1;
	if (json)
		print_json(out, path, &m, v, n);
	else
		print_text(out, path, &m, v, n);
	ckpt_free_vars(v, n);
	ckpt_meta_free(&m);
	return 0;
}
