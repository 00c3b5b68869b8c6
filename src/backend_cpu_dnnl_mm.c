/* Matrix products by oneDNN's matmul (backend_cpu_dnnl.h): bf16 operands
 * with fp32 sums and results on a CPU whose oneDNN multiplies bf16
 * (vdpbf16ps), fp32 otherwise.
 *
 * Each shape (sizes, transposes, strides, batch, beta) gets its primitive
 * once. In bf16 each operand's floats, from its first to its last, are
 * converted by a oneDNN reorder (to nearest even, as cpu_bf16_round) into
 * a scratch buffer of the same layout, which the product then reads with
 * the operand's own strides: a transposed or strided operand costs no
 * copy of its own. */
#include "backend_cpu_dnnl.h"
#include "backend_cpu_dnnl_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct mm_shape {
	int m, n, k, ta, tb, lda, ldb, ldc, bf16;
	float beta;
	struct batch2 bt; /* {1, 1, 0...} for one product */
	size_t span[2]; /* a's and b's floats, first to last */
	dnnl_primitive_t mm, to16[2];
	/* the operands as the product reads them, their floats and bf16
	 * copies as one line each, the result */
	dnnl_memory_t op[2], line[2], line16[2], c;
};

static struct {
	struct mm_shape **shape;
	int n, cap;
	uint16_t *scratch[2]; /* the bf16 copies of a and b */
	size_t size[2];
} g;

static void mm_release(void);

/* The layout of an operand of rows x cols (as the product reads it),
 * stored transposed or not, ld apart, s from one row of the batch to the
 * next and h from one head to the next. */
static void operand(dnnl_memory_desc_t *md, const struct batch2 *bt, int rows, int cols, int t,
		    int ld, size_t s, size_t h, dnnl_data_type_t type)
{
	/* the batch's axes (none, rows, or rows and heads), then the matrix's */
	int n = bt->heads > 1 ? 4 : bt->rows > 1 ? 3 : 2, at = n - 2;
	dnnl_dims_t dims = {bt->rows, bt->heads}, strides = {(dnnl_dim_t)s, (dnnl_dim_t)h};
	dims[at] = rows;
	dims[at + 1] = cols;
	strides[at] = t ? 1 : ld;
	strides[at + 1] = t ? ld : 1;
	DNNL_CHECK(dnnl_memory_desc_init_by_strides(md, n, dims, type, strides));
}

static struct mm_shape *mm_make(const struct mm_shape *key)
{
	struct mm_shape *s = malloc(sizeof(*s));
	ALLOC_CHECK(s);
	*s = *key;
	dnnl_data_type_t t = s->bf16 ? dnnl_bf16 : dnnl_f32;
	dnnl_memory_desc_t a, b, c;
	operand(&a, &s->bt, s->m, s->k, s->ta, s->lda, s->bt.sa, s->bt.ha, t);
	operand(&b, &s->bt, s->k, s->n, s->tb, s->ldb, s->bt.sb, s->bt.hb, t);
	operand(&c, &s->bt, s->m, s->n, 0, s->ldc, s->bt.sc, s->bt.hc, dnnl_f32);
	dnnl_primitive_attr_t attr = NULL;
	if (s->beta != 0.0f) { /* c = product + beta c */
		dnnl_post_ops_t po;
		DNNL_CHECK(dnnl_post_ops_create(&po));
		DNNL_CHECK(dnnl_post_ops_append_sum(po, s->beta));
		DNNL_CHECK(dnnl_primitive_attr_create(&attr));
		DNNL_CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
		DNNL_CHECK(dnnl_post_ops_destroy(po));
	}
	dnnl_matmul_desc_t d;
	DNNL_CHECK(dnnl_matmul_desc_init(&d, &a, &b, NULL, &c));
	s->mm = dn_make(&d, attr, NULL, NULL);
	if (attr)
		DNNL_CHECK(dnnl_primitive_attr_destroy(attr));
	s->op[0] = dn_mem(&a, 0);
	s->op[1] = dn_mem(&b, 0);
	s->c = dn_mem(&c, 0);
	for (int i = 0; i < 2; i++) {
		s->to16[i] = NULL;
		s->line[i] = s->line16[i] = NULL;
		if (!s->bf16)
			continue;
		dnnl_dims_t n = {(dnnl_dim_t)s->span[i]};
		dnnl_memory_desc_t f, h;
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&f, 1, n, dnnl_f32, dnnl_x));
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&h, 1, n, dnnl_bf16, dnnl_x));
		s->to16[i] = dn_reorder(&f, &h);
		s->line[i] = dn_mem(&f, 0);
		s->line16[i] = dn_mem(&h, 0);
	}
	return s;
}

static struct mm_shape *mm_shape_of(const struct mm_shape *key)
{
	for (int i = 0; i < g.n; i++) {
		struct mm_shape *s = g.shape[i];
		if (s->m == key->m && s->n == key->n && s->k == key->k && s->ta == key->ta &&
		    s->tb == key->tb && s->lda == key->lda && s->ldb == key->ldb &&
		    s->ldc == key->ldc && s->bf16 == key->bf16 && s->beta == key->beta &&
		    !memcmp(&s->bt, &key->bt, sizeof(key->bt)))
			return s;
	}
	dn_on_release(mm_release);
	return dn_keep((void ***)&g.shape, &g.n, &g.cap, mm_make(key));
}

/* Operand i (x) in the product's type: its bf16 copy in scratch i. */
static void take(struct mm_shape *s, int i, const float *x)
{
	if (!s->bf16) {
		dn_set(s->op[i], x);
		return;
	}
	size_t bytes = (s->span[i] * sizeof(uint16_t) + 63) / 64 * 64;
	if (g.size[i] < bytes) {
		free(g.scratch[i]);
		g.scratch[i] = aligned_alloc(64, bytes);
		ALLOC_CHECK(g.scratch[i]);
		g.size[i] = bytes;
	}
	dn_set(s->line[i], x);
	dn_set(s->line16[i], g.scratch[i]);
	dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, s->line[i]}, {DNNL_ARG_TO, s->line16[i]}};
	dn_run(s->to16[i], 2, a);
	dn_set(s->op[i], g.scratch[i]);
}

void cpu_dnnl_matmul(float *c, const float *a, const float *b, int m, int n, int k, int ta,
		     int tb, float beta, int lda, int ldb, int ldc, const struct batch2 *bt, int bf16)
{
	struct mm_shape key;
	memset(&key, 0, sizeof(key)); /* compared whole, padding too */
	key.m = m, key.n = n, key.k = k, key.ta = ta, key.tb = tb, key.lda = lda, key.ldb = ldb;
	key.ldc = ldc, key.bf16 = bf16, key.beta = beta;
	key.bt = bt ? *bt : (struct batch2){.rows = 1, .heads = 1};
	if (key.bt.rows == 1)
		key.bt.sa = key.bt.sb = key.bt.sc = 0;
	if (key.bt.heads == 1)
		key.bt.ha = key.bt.hb = key.bt.hc = 0;
	const struct batch2 *b2 = &key.bt;
	key.span[0] = batch2_span(b2->rows, b2->heads, b2->sa, b2->ha, ta ? k : m, ta ? m : k, lda);
	key.span[1] = batch2_span(b2->rows, b2->heads, b2->sb, b2->hb, tb ? n : k, tb ? k : n, ldb);
	struct mm_shape *s = mm_shape_of(&key);
	take(s, 0, a);
	take(s, 1, b);
	dn_set(s->c, c);
	dnnl_exec_arg_t args[] = {
		{DNNL_ARG_SRC, s->op[0]}, {DNNL_ARG_WEIGHTS, s->op[1]}, {DNNL_ARG_DST, s->c}};
	dn_run(s->mm, 3, args);
}

static void mm_release(void)
{
	for (int i = 0; i < g.n; i++) {
		struct mm_shape *s = g.shape[i];
		dn_destroy(s->mm);
		dnnl_memory_t m[] = {s->op[0], s->op[1], s->c, s->line[0], s->line[1],
				     s->line16[0], s->line16[1]};
		for (int j = 0; j < 2; j++)
			dn_destroy(s->to16[j]);
		for (size_t j = 0; j < sizeof(m) / sizeof(m[0]); j++)
			dn_drop(m[j]);
		free(s);
	}
	free(g.shape);
	free(g.scratch[0]);
	free(g.scratch[1]);
	memset(&g, 0, sizeof(g));
}

void cpu_dnnl_sgemm(float *c, const float *a, const float *b, int m, int n, int k, int ta, int tb,
		    float beta)
{
	DNNL_CHECK(dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, ta ? m : k, b,
			      tb ? k : n, beta, c, n));
}
