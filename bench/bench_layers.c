/* bench_layers: where one training step of a --model goes, layer by layer,
 * on the CPU backend, set against OpenBLAS sgemm alone doing the same matrix
 * products in the same run (the baseline bench/bench.sh prints beside it).
 *
 * usage: bench_layers [--model LAYERS] [--input-shape H,W,C] [--classes C]
 *                     [--rows R[,R...]] [--reps N] [--cpu-kernels onednn|own]
 *                     [--precision fp32|bf16]
 *   defaults: the CNN below, 28,28,1, 10 classes, rows 64,128, 20 reps,
 *   oneDNN's kernels (as mtrain's --cpu-kernels), fp32 (bf16: as mtrain's
 *   --precision bf16; the bare sgemm products stay fp32).
 * Per rows value it prints one table (per layer kind: ms per step forward
 * and backward, share of the step, GFLOP/s, the time of the kind's matrix
 * products inside the layers and of the same products run alone) and ends
 * with "bench_layers: check ok"; exit 1 on a wrong answer or bad arguments.
 *
 * Each step: every layer's layer_forward, the loss, every layer's
 * layer_backward, each timed alone; then each of the layers' products as a
 * bare cblas_sgemm on buffers of its own: dense's and conv2d's, and
 * attention's, its heads' products one call a product as the backend's
 * matmul_batched makes them (where the backend fuses the heads, the fused
 * ops, softmax and all, count as the layer's products). A figure is the median over the repeats of one
 * layer's (or product's) time, summed over the layers of a kind. Letters:
 * R rows per step, D input values per row (a token's on a sequence of T). */
#include "backend.h"
#include "bench_gemm.h"
#include "bench_products.h"
#include "layer_spec.h"
#include "layers.h"
#include "log.h"
#include "model.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_MODEL                                                                  \
	"conv2d:32:3,batchnorm,relu,maxpool2d:2,conv2d:64:3,batchnorm,relu,maxpool2d:2,flatten," \
	"dense:128,relu,dropout:0.3,dense"
#define WARMUP_S 0.3
#define MAX_REPS 1001
#define MAX_ROWS_LIST 8


/* Per-layer times of one repeat, seconds; [rep][layer]. */
struct times {
	double fwd[MAX_REPS][MODEL_MAX_LAYERS], bwd[MAX_REPS][MODEL_MAX_LAYERS];
	double mm_fwd[MAX_REPS][MODEL_MAX_LAYERS], mm_bwd[MAX_REPS][MODEL_MAX_LAYERS];
	double gemm[MAX_REPS][MAX_GEMMS];
	double loss[MAX_REPS], step[MAX_REPS];
};

/* The CPU backend with its products timed: the layers run exactly the CPU
 * backend's ops, and g_mm_s adds up the seconds spent in matmul and
 * matmul_batched. */
static const struct backend *g_cpu;
static double g_mm_s;

static void timed_matmul(const struct backend *be, float *c, const float *a, const float *b,
			 int m, int n, int k, int ta, int tb, float beta)
{
	double t0 = bench_now();
	g_cpu->matmul(g_cpu, c, a, b, m, n, k, ta, tb, beta);
	g_mm_s += bench_now() - t0;
}

static void timed_matmul_batched(const struct backend *be, float *c, const float *a,
				 const float *b, int m, int n, int k, int ta, int tb, float beta,
				 int batch, int lda, int ldb, int ldc, size_t sa, size_t sb,
				 size_t sc)
{
	double t0 = bench_now();
	g_cpu->matmul_batched(g_cpu, c, a, b, m, n, k, ta, tb, beta, batch, lda, ldb, ldc, sa, sb,
			      sc);
	g_mm_s += bench_now() - t0;
}

static void timed_matmul_heads(const struct backend *be, float *c, const float *a,
			       const float *b, int m, int n, int k, int ta, int tb, float beta,
			       int lda, int ldb, int ldc, const struct batch2 *bt)
{
	double t0 = bench_now();
	g_cpu->matmul_heads(g_cpu, c, a, b, m, n, k, ta, tb, beta, lda, ldb, ldc, bt);
	g_mm_s += bench_now() - t0;
}

/* The fused heads (backend.h's attn_forward, attn_backward): their
 * products with the softmax between them, counted as products. */
static int timed_attn_forward(const struct backend *be, float *o, float *p, float *pd,
			      const float *q, const float *k, const float *v,
			      const struct attn_dims *d)
{
	double t0 = bench_now();
	int done = g_cpu->attn_forward(g_cpu, o, p, pd, q, k, v, d);
	g_mm_s += bench_now() - t0;
	return done;
}

static int timed_attn_backward(const struct backend *be, float *dq, float *dk, float *dv,
			       const float *dout, const float *q, const float *k, const float *v,
			       const float *p, const float *pd, const struct attn_dims *d)
{
	double t0 = bench_now();
	int done = g_cpu->attn_backward(g_cpu, dq, dk, dv, dout, q, k, v, p, pd, d);
	g_mm_s += bench_now() - t0;
	return done;
}

/* One step as model_forward then model_backward make it, each layer timed
 * alone into rep r of t (with the part its matmuls took). The buffers and
 * the walk are model.c's (model_layer_forward, model_layer_backward), so
 * the gradients match. */
static void step_layers(struct model *m, int rows, struct times *t, int r)
{
	for (int i = 0; i < m->n_layers; i++) {
		g_mm_s = 0;
		double t0 = bench_now();
		model_layer_forward(m, i, rows, 1);
		t->fwd[r][i] = bench_now() - t0;
		t->mm_fwd[r][i] = g_mm_s;
	}
	const float *logits = m->layer[m->n_layers - 1].y;
	double t0 = bench_now();
	m->be->xent(m->be, m->dlogits, m->stats, logits, m->y, rows, m->classes, 1.0f / (float)rows);
	t->loss[r] = bench_now() - t0;

	for (int i = m->n_layers - 1; i >= 0; i--) {
		g_mm_s = 0;
		t0 = bench_now();
		model_layer_backward(m, i, rows, NULL, NULL);
		t->bwd[r][i] = bench_now() - t0;
		t->mm_bwd[r][i] = g_mm_s;
	}
}

/* The median of v[0][col], v[1][col], ... v[n-1][col] (row stride stride
 * doubles). */
static double median_col(const double *v, int n, size_t stride, int col)
{
	double s[MAX_REPS];
	for (int i = 0; i < n; i++)
		s[i] = v[(size_t)i * stride + (size_t)col];
	qsort(s, (size_t)n, sizeof(double), bench_cmp_double);
	return (s[(n - 1) / 2] + s[n / 2]) / 2;
}

/* Whether the layer-by-layer step computed what model_forward and
 * model_backward compute: the same loss and the same gradients (g_ref),
 * all finite. */
static int check_step(struct model *m, const float *g_ref, float loss_ref, int rows)
{
	float st[2];
	model_take_stats(m, st);
	size_t P = m->reg.total;
	double worst = 0, scale = 0;
	for (size_t i = 0; i < P; i++) {
		if (!isfinite(m->g[i])) {
			fprintf(stderr, "bench_layers: gradient %zu is %g\n", i, m->g[i]);
			return 0;
		}
		double d = fabs((double)m->g[i] - g_ref[i]);
		worst = d > worst ? d : worst;
		scale = fabs(g_ref[i]) > scale ? fabs(g_ref[i]) : scale;
	}
	if (!isfinite(st[0]) || fabs(st[0] - loss_ref) > 1e-5 * fabs(loss_ref) ||
	    worst > 1e-5 * scale) {
		fprintf(stderr, "bench_layers: layer-by-layer step differs from model_forward/"
			"model_backward: loss %g vs %g, largest gradient difference %g of %g\n",
			st[0], loss_ref, worst, scale);
		return 0;
	}
	/* Random inputs and Glorot weights: near ln(C) per row, never far off. */
	double per_row = st[0] / rows;
	if (!(per_row > 0 && per_row < 10 * log(m->classes))) {
		fprintf(stderr, "bench_layers: loss per row %g, not near ln(%d)\n", per_row,
			m->classes);
		return 0;
	}
	return 1;
}

/* Runs the benchmark for one batch size and prints its table; 0, -1 on a
 * wrong answer, or -2 when the model cannot be laid out (or its products
 * do not fit, or memory runs out). */
static int bench_rows(const struct layer_spec *spec, int n_spec, const int in[3], int classes,
		      int rows, int reps, const struct backend *be, struct times *t)
{
	struct model m;
	if (model_plan(&m, spec, n_spec, in, classes, 7)) {
		fprintf(stderr, "bench_layers: %s\n", user_error_text());
		return -2;
	}
	model_alloc(&m, be, rows);
	model_glorot(&m, 1, m.w);
	float *x = bench_rand((size_t)rows * m.in_dim, 0.0f); /* pixels in [0, 1) */
	int32_t *y = malloc((size_t)rows * sizeof(int32_t));
	float *g_ref = malloc(m.reg.total * sizeof(float));
	struct products *prod = calloc(1, sizeof(*prod));
	int status = -2;
	if (!y || !g_ref || !prod || products_init(prod, &m, rows))
		goto out;
	status = -1;
	struct gemm *gemms = prod->g;
	int n_gemms = prod->n;
	for (int r = 0; r < rows; r++)
		y[r] = (int32_t)(bench_unit() * classes);
	model_set_batch(&m, x, y, rows);
	model_set_position(&m, 1, 0);

	/* The reference: the model's own forward and backward. */
	float st[2];
	model_take_stats(&m, st);
	model_forward(&m, rows, 1, 1.0f / (float)rows);
	model_backward(&m, rows, NULL, NULL);
	model_take_stats(&m, st);
	float loss_ref = st[0];
	memcpy(g_ref, m.g, m.reg.total * sizeof(float));
	step_layers(&m, rows, t, 0);
	if (!check_step(&m, g_ref, loss_ref, rows))
		goto out;
	for (int i = 0; i < n_gemms; i++) {
		gemm_run(&gemms[i]);
		if (!gemm_check(&gemms[i], "bench_layers"))
			goto out;
	}

	for (double t0 = bench_now(); bench_now() - t0 < WARMUP_S;) {
		step_layers(&m, rows, t, 0);
		for (int i = 0; i < n_gemms; i++)
			gemm_run(&gemms[i]);
	}
	/* Interleaved, so that a slow spell of the machine hits all alike: the
	 * layers one by one, the bare products, the model's whole step. */
	for (int r = 0; r < reps; r++) {
		step_layers(&m, rows, t, r);
		for (int i = 0; i < n_gemms; i++) {
			double t0 = bench_now();
			gemm_run(&gemms[i]);
			t->gemm[r][i] = bench_now() - t0;
		}
		double t0 = bench_now();
		model_forward(&m, rows, 1, 1.0f / (float)rows);
		model_backward(&m, rows, NULL, NULL);
		t->step[r] = bench_now() - t0;
	}
	/* The weights, batch and step never change: one more step after the
	 * timed ones still gives the reference's loss and gradients. */
	model_take_stats(&m, st);
	step_layers(&m, rows, t, reps); /* reps < MAX_REPS: a spare row */
	if (!check_step(&m, g_ref, loss_ref, rows))
		goto out;
	for (int i = 0; i < n_gemms; i++)
		if (!gemm_check(&gemms[i], "bench_layers"))
			goto out;

	/* Per kind, in the order kinds first appear: sums of per-layer medians. */
	size_t stride = MODEL_MAX_LAYERS;
	int kinds[LAYER_KIND_COUNT], n_kinds = 0;
	double fwd[LAYER_KIND_COUNT] = {0}, bwd[LAYER_KIND_COUNT] = {0}, mm[LAYER_KIND_COUNT] = {0},
	       sg[LAYER_KIND_COUNT] = {0}, fl[LAYER_KIND_COUNT] = {0};
	int count[LAYER_KIND_COUNT] = {0};
	for (int i = 0; i < m.n_layers; i++) {
		const struct layer *l = &m.layer[i];
		int k = (int)l->spec.kind;
		if (!count[k]++)
			kinds[n_kinds++] = k;
		fwd[k] += median_col(&t->fwd[0][0], reps, stride, i);
		bwd[k] += median_col(&t->bwd[0][0], reps, stride, i);
		mm[k] += median_col(&t->mm_fwd[0][0], reps, stride, i) +
			 median_col(&t->mm_bwd[0][0], reps, stride, i);
		if (l->n_vars)
			fl[k] += layer_flops(l) * rows * (l->needs_dx[0] ? 3 : 2);
	}
	for (int i = 0; i < n_gemms; i++)
		sg[m.layer[gemms[i].tag].spec.kind] += median_col(&t->gemm[0][0], reps, MAX_GEMMS, i);
	double loss_s = median_col(t->loss, reps, 1, 0), step_s = median_col(t->step, reps, 1, 0);
	double total = loss_s, mm_all = 0, sg_all = 0, prod_all = 0;
	for (int i = 0; i < n_kinds; i++) {
		total += fwd[kinds[i]] + bwd[kinds[i]];
		mm_all += mm[kinds[i]];
		sg_all += sg[kinds[i]];
		if (sg[kinds[i]] > 0)
			prod_all += fwd[kinds[i]] + bwd[kinds[i]];
	}

	printf("rows %d: %d repeats; ms per step; share = of the sum of layers and loss;\n", rows,
	       reps);
	printf("GF/s = the kind's forward+backward FLOPs (layer_flops) / its time; in-layer mm =\n"
	       "its matmuls' time inside the layers; sgemm = the same products alone\n");
	printf("%-13s %3s %8s %8s %6s %7s | %8s %8s %9s %9s\n", "kind", "n", "fwd_ms", "bwd_ms",
	       "share", "GF/s", "mm_ms", "sgemm_ms", "mm/sgemm", "kind/sgemm");
	for (int i = 0; i < n_kinds; i++) {
		int k = kinds[i];
		double s = fwd[k] + bwd[k];
		printf("%-13s %3d %8.3f %8.3f %5.1f%% ", layer_names[k], count[k], 1e3 * fwd[k],
		       1e3 * bwd[k], 100 * s / total);
		if (sg[k] > 0 && mm[k] > 0)
			printf("%7.2f | %8.3f %8.3f %9.2f %9.2f\n", fl[k] / s * 1e-9, 1e3 * mm[k],
			       1e3 * sg[k], mm[k] / sg[k], s / sg[k]);
		else if (sg[k] > 0) /* no matmul inside: oneDNN's convolutions */
			printf("%7.2f | %8s %8.3f %9s %9.2f\n", fl[k] / s * 1e-9, "-", 1e3 * sg[k],
			       "-", s / sg[k]);
		else
			printf("%7s | %8s %8s %9s %9s\n", "-", "-", "-", "-", "-");
	}
	printf("%-13s %3s %8.3f %8s %5.1f%%\n", "loss", "", 1e3 * loss_s, "", 100 * loss_s / total);
	double model_fl = model_flops_per_row(&m) * rows;
	printf("%-13s %3d %8s %8s %5.1f%% %7.2f | %8.3f %8.3f %9.2f %9.2f\n", "all", m.n_layers,
	       "", "", 100.0, model_fl / total * 1e-9, 1e3 * mm_all, 1e3 * sg_all,
	       mm_all / sg_all, prod_all / sg_all);
	printf("layers rows %d sum_ms %.3f step_ms %.3f sum/step %.3f gflops %.2f sgemm_gflops %.2f "
	       "conv_dense/sgemm %.2f mflop_step %.1f\n", rows, 1e3 * total, 1e3 * step_s,
	       total / step_s, model_fl / step_s * 1e-9, model_fl / sg_all * 1e-9,
	       prod_all / sg_all, model_fl * 1e-6);
	status = 0;
out:
	if (prod)
		products_free(prod);
	free(prod);
	free(x);
	free(y);
	free(g_ref);
	model_free(&m);
	return status;
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_layers [--model LAYERS] [--input-shape H,W,C] "
		"[--classes C] [--rows R[,R...]] [--reps N] [--cpu-kernels onednn|own]\n"
		"   [--precision fp32|bf16] (defaults: the CNN %s, 28,28,1, 10, 64,128, 20, "
		"onednn, fp32)\n", DEFAULT_MODEL);
	return 1;
}

int main(int argc, char **argv)
{
	backend_cpu_pick_kernels(argv); /* the kernels mtrain runs */
	const char *model = DEFAULT_MODEL, *shape = "28,28,1";
	int classes = 10, reps = 20, rows[MAX_ROWS_LIST] = {64, 128}, n_rows = 2, own = 0, bf16 = 0;
	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			return usage();
		const char *v = argv[++i];
		if (!strcmp(argv[i - 1], "--model"))
			model = v;
		else if (!strcmp(argv[i - 1], "--input-shape"))
			shape = v;
		else if (!strcmp(argv[i - 1], "--classes")) {
			if (bench_parse_int(v, 2, 1 << 16, &classes))
				return usage();
		} else if (!strcmp(argv[i - 1], "--reps")) {
			if (bench_parse_int(v, 1, MAX_REPS - 1, &reps))
				return usage();
		} else if (!strcmp(argv[i - 1], "--cpu-kernels")) {
			if (strcmp(v, "onednn") && strcmp(v, "own"))
				return usage();
			own = !strcmp(v, "own");
		} else if (!strcmp(argv[i - 1], "--precision")) {
			if (strcmp(v, "fp32") && strcmp(v, "bf16"))
				return usage();
			bf16 = !strcmp(v, "bf16");
		} else if (!strcmp(argv[i - 1], "--rows")) {
			char buf[256], *save = NULL;
			snprintf(buf, sizeof(buf), "%s", v);
			n_rows = 0;
			for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
				if (n_rows == MAX_ROWS_LIST || bench_parse_int(tok, 1, 1 << 16, &rows[n_rows++]))
					return usage();
			if (!n_rows)
				return usage();
		} else {
			return usage();
		}
	}
	int in[3];
	char end;
	if (sscanf(shape, "%d,%d,%d%c", &in[0], &in[1], &in[2], &end) != 3 || in[0] < 1 ||
	    in[1] < 1 || in[2] < 1)
		return usage();
	struct layer_spec spec[MODEL_MAX_LAYERS];
	int n_spec;
	if (layer_spec_parse(model, "--model", spec, MODEL_MAX_LAYERS, &n_spec)) {
		fprintf(stderr, "bench_layers: %s\n", user_error_text());
		return 1;
	}

	/* backend_cpu sets one BLAS thread, as each mtrain rank runs. */
	g_cpu = own ? backend_cpu_own() : backend_cpu();
	g_cpu->set_precision(g_cpu, bf16 ? PRECISION_BF16 : PRECISION_FP32);
	struct backend timed = *g_cpu;
	timed.matmul = timed_matmul;
	timed.matmul_batched = timed_matmul_batched;
	if (g_cpu->matmul_heads)
		timed.matmul_heads = timed_matmul_heads;
	if (g_cpu->attn_forward) {
		timed.attn_forward = timed_attn_forward;
		timed.attn_backward = timed_attn_backward;
	}
	struct times *t = malloc(sizeof(*t));
	if (!t)
		return 1;
	char text[1024];
	layer_spec_text(spec, n_spec, text, sizeof(text));
	const char *core_env = getenv("OPENBLAS_CORETYPE");
	printf("bench_layers: model %s, input %d,%d,%d, %d classes, CPU backend%s, 1 BLAS thread, "
	       "conv2d by %s\n", text, in[0], in[1], in[2], classes, bf16 ? " bf16" : "",
	       g_cpu->conv_kernels ? g_cpu->conv_kernels() : "im2col, sgemm, col2im");
	printf("OpenBLAS config: %s; core %s (OPENBLAS_CORETYPE=%s); relu after conv2d/dense is fused "
	       "into that layer's forward\n", openblas_get_config(), openblas_get_corename(),
	       core_env ? core_env : "unset");
	int status = 0;
	for (int i = 0; i < n_rows && !status; i++)
		status = bench_rows(spec, n_spec, in, classes, rows[i], reps, &timed, t);
	free(t);
	if (status) {
		if (status == -1)
			printf("bench_layers: check FAILED\n");
		return 1;
	}
	printf("bench_layers: check ok (loss finite and equal to model_forward's, gradients equal to "
	       "model_backward's, sgemm products against a naive product)\n");
	return 0;
}
