/* The CPU backend's own loops shared out over a rank's threads
 * (CPU_SPLIT, where one rank owns several cores): every op that splits its
 * rows, elements or columns gives the same bits on 2 and 3 threads as on 1
 * (the activations, the bias's add and gradient, the residual add,
 * dropout, the softmax and its backward, layer normalization both ways,
 * dx in place, the optimizer, the EMA, a scale, and the fused attention
 * heads, causal with dropout and not), on shapes that each split into
 * several uneven parts: rows and columns that the thread counts do not
 * divide. And CPU_SPLIT itself: one thread's loop runs in no OpenMP
 * region. */
#include "backend.h"
#include "backend_cpu_seq.h"
#include "rng.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

const struct backend *backend_cpu(void);

enum { ROWS = 1001, COLS = 70, N = ROWS * COLS, SM_COLS = 49, SM_ROWS = 49 * 24 };
enum { AR = 7, AT = 49, AH = 4, AK = 16, AD = AH * AK }; /* attention: rows of T tokens */

/* Every op's outputs of one run, one buffer after the other. */
#define OUTS 40
struct outs {
	float *buf[OUTS];
	size_t len[OUTS];
	int n;
};

static float *out(struct outs *o, size_t len)
{
	o->buf[o->n] = calloc(len, sizeof(float));
	o->len[o->n] = len;
	return o->buf[o->n++];
}

static float *filled(struct rng *r, size_t len)
{
	float *x = malloc(len * sizeof(float));
	for (size_t i = 0; i < len; i++)
		x[i] = 2.0f * rng_uniform(r) - 1.0f;
	return x;
}

/* The inputs, the same for every run. */
struct in {
	float *x, *y, *z, *bias, *gamma, *beta, *sm, *q, *k, *v, *dout;
};

static void run(const struct backend *be, const struct in *in, struct outs *o)
{
	float *z = out(o, N), *a = out(o, N);
	memcpy(z, in->z, N * sizeof(float));
	be->bias_act(be, a, z, in->bias, ROWS, COLS, ACT_GELU);
	be->act_forward(be, out(o, N), in->x, N, ACT_GELU_TANH);
	be->act_backward(be, out(o, N), in->y, in->x, N, ACT_GELU);
	float *sum = out(o, N);
	be->add(be, sum, in->x, in->y, N, out(o, N), ACT_RELU);
	struct dropout_key key = {3, 17, 1000, 0.25f};
	be->dropout(be, out(o, N), in->x, ROWS, COLS, &key);
	be->bias_grad(be, out(o, COLS), in->y, ROWS, COLS);

	float *p = out(o, (size_t)SM_ROWS * SM_COLS);
	be->softmax(be, p, in->sm, SM_ROWS, SM_COLS, 0.7f, 1);
	be->softmax_backward(be, out(o, (size_t)SM_ROWS * SM_COLS), in->sm, p, SM_ROWS, SM_COLS,
			     0.7f);

	float *ln = out(o, N), *mean = out(o, ROWS), *rstd = out(o, ROWS);
	be->ln_forward(be, ln, mean, rstd, in->x, in->gamma, in->beta, ROWS, COLS, 1e-5f);
	float *dg = out(o, COLS), *db = out(o, COLS), *dx = out(o, N);
	be->ln_backward(be, dx, dg, db, in->y, in->x, mean, rstd, in->gamma, ROWS, COLS);
	float *inplace = out(o, N); /* dx over dy, as the layer calls it */
	memcpy(inplace, in->y, N * sizeof(float));
	be->ln_backward(be, inplace, out(o, COLS), out(o, COLS), inplace, in->x, mean, rstd,
			in->gamma, ROWS, COLS);

	/* the optimizer (AdamW, then Lion on its slot), the EMA, a scale */
	float *w = out(o, N), *s1 = out(o, N), *s2 = out(o, N), *shadow = out(o, N);
	memcpy(w, in->x, N * sizeof(float));
	memcpy(shadow, in->z, N * sizeof(float));
	struct optim_hp adamw = {OPTIM_ADAMW, 1e-3f, 0, 0, 0.9f, 0.99f, 1e-8f, 0.1f, 0.1f, 0.01f};
	struct optim_hp lion = {OPTIM_LION, 1e-4f, 0, 0, 0.9f, 0.99f, 0, 0.1f, 0, 0};
	be->optim_update(be, w, in->y, s1, s2, N, &adamw);
	be->optim_update(be, w, in->z, s1, NULL, N, &lion);
	be->ema_update(be, shadow, w, N, 0.999f);
	be->scale(be, s2, N, 0.37f);

	size_t n = (size_t)AR * AT * AD, np = (size_t)AR * AH * AT * AT;
	for (int causal = 0; causal < 2; causal++) { /* causal with dropout */
		struct attn_dims d = {AR, AT, AH, AK, 0.25f, causal, {0}};
		if (causal)
			d.drop = (struct dropout_key){5, 2, 40, 0.1f};
		float *ao = out(o, n), *ap = out(o, np), *apd = causal ? out(o, np) : ap;
		float *grads = out(o, 3 * n);
		EXPECT(be->attn_forward(be, ao, ap, apd, in->q, in->k, in->v, &d));
		EXPECT(be->attn_backward(be, grads, grads + n, grads + 2 * n, in->dout, in->q,
					 in->k, in->v, ap, apd, &d));
	}
}

/* CPU_SPLIT over ROWS runs its block parts times, their shares covering
 * every row once, at OpenMP nesting level: with one part in no region at
 * all (libgomp would make a team at each call). */
static void split_runs(int parts, int level)
{
	int ran = 0, covered = 0, levels_ok = 1;
	CPU_SPLIT(ROWS, 1, part, lo, hi, {
		CPU_PRAGMA(omp atomic)
		ran++;
		CPU_PRAGMA(omp atomic)
		covered += (int)(hi - lo);
		if (omp_get_level() != level || part >= parts)
			levels_ok = 0;
	});
	EXPECT(ran == parts && covered == ROWS && levels_ok);
}

int main(void)
{
	const struct backend *be = backend_cpu();
	struct rng r;
	rng_init(&r, 11, 0);
	size_t na = (size_t)AR * AT * AD;
	struct in in = {filled(&r, N),	     filled(&r, N),	    filled(&r, N),
			filled(&r, COLS),    filled(&r, COLS),	    filled(&r, COLS),
			filled(&r, (size_t)SM_ROWS * SM_COLS), filled(&r, na),
			filled(&r, na),	     filled(&r, na),	    filled(&r, na)};
	struct outs one = {0};
	EXPECT(backend_cpu_threads(1, 1) == 1);
	EXPECT(cpu_split_parts(ROWS, 1) == 1); /* one thread: nothing shared out */
	split_runs(1, 0);
	run(be, &in, &one);
	for (int t = 2; t <= 3; t++) {
		EXPECT(backend_cpu_threads(t, 1) == t);
		/* each op's work splits t ways: the element-wise loops, the
		 * rows, the columns of bias_grad and ln_backward (5 vectors of
		 * 16), the softmax's rows, the attention's rows */
		EXPECT(cpu_split_parts(N, CPU_SPLIT_FLOATS) == t);
		EXPECT(cpu_split_parts(ROWS, cpu_rows_grain(COLS)) == t);
		EXPECT(cpu_split_parts(SM_ROWS, cpu_rows_grain(SM_COLS)) == t);
		EXPECT(cpu_split_parts(AR, 1) == t);
		split_runs(t, 1);
		struct outs many = {0};
		run(be, &in, &many);
		EXPECT(many.n == one.n);
		for (int i = 0; i < one.n && i < many.n; i++) {
			int same = !memcmp(one.buf[i], many.buf[i], one.len[i] * sizeof(float));
			if (!same)
				fprintf(stderr, "output %d differs on %d threads\n", i, t);
			EXPECT(same);
			free(many.buf[i]);
		}
	}
	backend_cpu_threads(1, 1);
	for (int i = 0; i < one.n; i++)
		free(one.buf[i]);
	float *inputs[] = {in.x, in.y, in.z, in.bias, in.gamma, in.beta, in.sm,
			   in.q,  in.k, in.v, in.dout};
	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++)
		free(inputs[i]);
	return unit_done("test_threads");
}
