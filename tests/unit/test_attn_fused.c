/* The CPU backend's fused attention heads (attn_forward, attn_backward)
 * against the formulas summed in double: the ViT's shape, causal strips
 * that end inside a panel and on one, heads of widths that are not whole
 * panels with contexts too long for the small path's packing (OpenBLAS
 * then), one token, dropout on the probabilities (the dropout op's masks,
 * dropout_scale_at of the row's key). And its softmax's rows, eight keys at a time, the
 * same bits as mt_expf a key at a time in row_dot's order. */
#include "backend.h"
#include "rng.h"
#include "unit.h"

#include <stdlib.h>

const struct backend *backend_cpu(void);

static float uniform(struct rng *r) { return rng_uniform(r) - 0.5f; }

/* p, o and the gradients of one row's head in double: the oracle. mask:
 * the head's dropout multipliers (T, T), or NULL. */
struct ref {
	double *p, *o, *dq, *dk, *dv;
	const float *mask;
};

static double kept(const struct ref *r, int i, int j, int T)
{
	return r->p[i * T + j] * (r->mask ? r->mask[i * T + j] : 1.0f);
}

static void reference(struct ref *r, const float *q, const float *k, const float *v,
		      const float *dout, int T, int D, int K, float scale, int causal)
{
	double *ds = calloc((size_t)T * T, sizeof(double));
	for (int i = 0; i < T; i++) {
		double mx = -1e300, sum = 0;
		for (int j = 0; j <= (causal ? i : T - 1); j++) {
			double s = 0;
			for (int c = 0; c < K; c++)
				s += (double)q[i * D + c] * k[j * D + c];
			r->p[i * T + j] = s * scale;
			mx = s * scale > mx ? s * scale : mx;
		}
		for (int j = 0; j < T; j++) {
			int seen = !causal || j <= i;
			r->p[i * T + j] = seen ? exp(r->p[i * T + j] - mx) : 0.0;
			sum += r->p[i * T + j];
		}
		for (int j = 0; j < T; j++)
			r->p[i * T + j] /= sum;
	}
	for (int i = 0; i < T; i++)
		for (int c = 0; c < K; c++) {
			double o = 0;
			for (int j = 0; j < T; j++)
				o += kept(r, i, j, T) * v[j * D + c];
			r->o[i * K + c] = o;
		}
	for (int i = 0; i < T; i++) { /* dp, then ds = scale p (dp - sum dp p) */
		double dot = 0;
		for (int j = 0; j < T; j++) {
			double dp = 0;
			for (int c = 0; c < K; c++)
				dp += (double)dout[i * D + c] * v[j * D + c];
			dp *= r->mask ? r->mask[i * T + j] : 1.0f;
			ds[i * T + j] = dp;
			dot += dp * r->p[i * T + j];
		}
		for (int j = 0; j < T; j++)
			ds[i * T + j] = scale * r->p[i * T + j] * (ds[i * T + j] - dot);
	}
	for (int i = 0; i < T; i++)
		for (int c = 0; c < K; c++) {
			double dq = 0, dk = 0, dv = 0;
			for (int j = 0; j < T; j++) {
				dq += ds[i * T + j] * k[j * D + c];
				dk += ds[j * T + i] * q[j * D + c];
				dv += kept(r, j, i, T) * dout[j * D + c];
			}
			r->dq[i * K + c] = dq;
			r->dk[i * K + c] = dk;
			r->dv[i * K + c] = dv;
		}
	free(ds);
}

/* The largest |got - want| / (1 + |want|) of a head's columns. */
static double worst(const float *got, int ld, const double *want, int T, int K)
{
	double w = 0;
	for (int i = 0; i < T; i++)
		for (int c = 0; c < K; c++) {
			double e = fabs(got[i * ld + c] - want[i * K + c]) / (1 + fabs(want[i * K + c]));
			w = e > w ? e : w;
		}
	return w;
}

static int zeros_of(const float *x, size_t n)
{
	int z = 0;
	for (size_t i = 0; i < n; i++)
		z += x[i] == 0.0f;
	return z;
}

static void check_shape(const struct backend *be, int R, int T, int H, int K, int causal,
			float rate)
{
	int D = H * K;
	size_t n = (size_t)R * T * D, np = (size_t)R * H * T * T;
	float *buf = malloc((9 * n + 3 * np) * sizeof(float));
	float *q = buf, *k = q + n, *v = k + n, *dout = v + n, *o = dout + n, *dq = o + n;
	float *dk = dq + n, *dv = dk + n, *p = dv + n, *pd = rate > 0 ? p + np : p;
	float *mask = p + 2 * np;
	struct rng seed;
	rng_init(&seed, 3, (uint64_t)(T * 131 + H * 7 + K + causal));
	for (size_t i = 0; i < 4 * n; i++)
		buf[i] = 2.0f * uniform(&seed);
	struct attn_dims d = {R, T, H, K, 1.0f / sqrtf((float)K), causal, {42, 7, 100, rate}};
	EXPECT(be->attn_forward(be, o, p, pd, q, k, v, &d) == 1);
	EXPECT(be->attn_backward(be, dq, dk, dv, dout, q, k, v, p, pd, &d) == 1);
	struct ref r;
	double *mem = malloc(((size_t)T * T + 4 * (size_t)T * K) * sizeof(double));
	r.p = mem;
	r.o = r.p + (size_t)T * T;
	r.dq = r.o + (size_t)T * K;
	r.dk = r.dq + (size_t)T * K;
	r.dv = r.dk + (size_t)T * K;
	double err[5] = {0};
	for (int row = 0; row < R; row++)
		for (int h = 0; h < H; h++) {
			size_t at = (size_t)row * T * D + (size_t)h * K;
			uint64_t key = dropout_row_key(42, 7, 100 + (uint64_t)row);
			for (int u = 0; u < T * T; u++)
				mask[u] = dropout_scale_at(key, (uint64_t)h * T * T + (uint64_t)u, rate);
			r.mask = rate > 0 ? mask : NULL;
			reference(&r, q + at, k + at, v + at, dout + at, T, D, K, d.scale, causal);
			const float *ph = p + ((size_t)row * H + h) * T * T;
			double e[5] = {worst(ph, T, r.p, T, T), worst(o + at, D, r.o, T, K),
				       worst(dq + at, D, r.dq, T, K), worst(dk + at, D, r.dk, T, K),
				       worst(dv + at, D, r.dv, T, K)};
			for (int x = 0; x < 5; x++)
				err[x] = e[x] > err[x] ? e[x] : err[x];
		}
	if (rate > 0) { /* pd is p masked: some dropped, the rest scaled */
		int dropped = 0, scaled = 0;
		for (size_t i = 0; i < np; i++) {
			dropped += p[i] != 0.0f && pd[i] == 0.0f;
			scaled += p[i] != 0.0f && pd[i] == p[i] * (1.0f / (1.0f - rate));
		}
		EXPECT(dropped > 0 && scaled > 0 && dropped + scaled == (int)np - zeros_of(p, np));
	}
	printf("R %d T %3d H %d K %2d causal %d drop %.1f: p %.1e o %.1e dq %.1e dk %.1e dv %.1e\n", R, T,
	       H, K, causal, rate, err[0], err[1], err[2], err[3], err[4]);
	for (int x = 0; x < 5; x++)
		EXPECT(err[x] < 1e-5);
	free(mem);
	free(buf);
}

/* be->softmax against mt_expf a key at a time, summed as row_dot sums
 * (lane j mod 8, then the fixed tree): bit for bit. */
static void check_softmax_bits(const struct backend *be, int cols, int causal)
{
	int rows = 3 * cols;
	float *x = malloc((size_t)rows * cols * sizeof(float)), *y = malloc((size_t)rows * cols * sizeof(float));
	struct rng seed;
	rng_init(&seed, 4, (uint64_t)cols);
	for (int i = 0; i < rows * cols; i++)
		x[i] = 40.0f * uniform(&seed);
	float scale = 0.37f;
	be->softmax(be, y, x, rows, cols, scale, causal);
	int bad = 0;
	for (int r = 0; r < rows; r++) {
		const float *xr = x + (size_t)r * cols;
		int q = r % cols, n = causal ? q + 1 : cols;
		float mx = xr[0] * scale, lane[8] = {0}, e[512];
		for (int j = 0; j < n; j++)
			mx = xr[j] * scale > mx ? xr[j] * scale : mx;
		for (int j = 0; j < n; j++) {
			e[j] = mt_expf(xr[j] * scale - mx);
			lane[j % 8] += e[j];
		}
		float sum = ((lane[0] + lane[4]) + (lane[2] + lane[6])) +
			    ((lane[1] + lane[5]) + (lane[3] + lane[7]));
		float inv = 1.0f / sum;
		for (int j = 0; j < cols; j++)
			bad += y[(size_t)r * cols + j] != (j < n ? e[j] * inv : 0.0f);
	}
	if (bad)
		fprintf(stderr, "softmax %d cols causal %d: %d values not mt_expf's bits\n", cols,
			causal, bad);
	EXPECT(bad == 0);
	free(x);
	free(y);
}

int main(void)
{
	const struct backend *be = backend_cpu();
	check_shape(be, 2, 49, 4, 16, 0, 0.0f); /* the ViT's heads */
	check_shape(be, 2, 49, 4, 16, 1, 0.0f); /* causal: strips end inside a panel */
	check_shape(be, 1, 64, 2, 32, 1, 0.0f); /* on whole panels */
	check_shape(be, 2, 70, 3, 5, 1, 0.0f);  /* K not panels, T past the packing: OpenBLAS */
	check_shape(be, 1, 70, 2, 5, 0, 0.0f);
	check_shape(be, 3, 7, 2, 3, 0, 0.0f);   /* odd and small */
	check_shape(be, 3, 7, 2, 3, 1, 0.0f);
	check_shape(be, 1, 1, 1, 4, 1, 0.0f);   /* one token */
	check_shape(be, 1, 33, 1, 64, 0, 0.0f); /* wide heads */
	check_shape(be, 2, 40, 3, 8, 1, 0.2f);  /* dropout, causal */
	check_shape(be, 2, 20, 2, 16, 0, 0.3f); /* dropout */
	for (int cols = 1; cols <= 70; cols += 3)
		for (int causal = 0; causal < 2; causal++)
			check_softmax_bits(be, cols, causal);
	return unit_done("test_attn_fused");
}
