/* The CPU backend's sequence ops (backend_cpu_seq.h): the attention's
 * masked softmax, layer normalization and the embedding's look-up (its
 * batched products are backend_cpu.c's, with the others), as loops over the
 * formulas of mathfn_seq.h. Sums run in a fixed order (double for a row's
 * moments), so results are the same bits run after run. */
#include "backend_cpu_seq.h"

#include <math.h>
#include <string.h>

CPU_WIDE void cpu_softmax(const struct backend *be, float *y, const float *x, int rows, int cols,
		 float scale, int causal)
{
	for (int r = 0; r < rows;) { /* blocks that start a C x C block's query */
		int q = r % cols, n = cols - q < SOFTMAX_BLOCK ? cols - q : SOFTMAX_BLOCK;
		n = rows - r < n ? rows - r : n;
		softmax_rows(y + (size_t)r * cols, (size_t)cols, x + (size_t)r * cols,
			     (size_t)cols, n, cols, q, scale, causal);
		r += n;
	}
}

CPU_WIDE void cpu_softmax_backward(const struct backend *be, float *dx, const float *dy, const float *y,
			  int rows, int cols, float scale)
{
	for (int r = 0; r < rows; r++)
		softmax_backward_row(dx + (size_t)r * cols, dy + (size_t)r * cols,
				     y + (size_t)r * cols, cols, scale);
}

CPU_WIDE void cpu_ln_forward(const struct backend *be, float *y, float *mean, float *rstd, const float *x,
		    const float *gamma, const float *beta, int rows, int cols, float eps)
{
	for (int r = 0; r < rows; r++) {
		const float *xr = x + (size_t)r * cols;
		float *yr = y + (size_t)r * cols;
		float mu = row_dot(xr, NULL, cols) / (float)cols;
		for (int j = 0; j < cols; j++) /* the centred values, squared after */
			yr[j] = xr[j] - mu;
		float rs = ln_rstd((double)row_dot(yr, yr, cols) / cols, eps);
		for (int j = 0; j < cols; j++)
			yr[j] = ln_y(xr[j], mu, rs, gamma[j], beta[j]);
		mean[r] = mu;
		rstd[r] = rs;
	}
}

CPU_WIDE void cpu_ln_backward(const struct backend *be, float *dx, float *dgamma, float *dbeta,
		     const float *dy, const float *x, const float *mean, const float *rstd,
		     const float *gamma, int rows, int cols)
{
	memset(dgamma, 0, (size_t)cols * sizeof(float));
	memset(dbeta, 0, (size_t)cols * sizeof(float));
	for (int r = 0; r < rows; r++) {
		const float *dyr = dy + (size_t)r * cols, *xr = x + (size_t)r * cols;
		float mu = mean[r], rs = rstd[r];
		/* lane l sums the columns j = l mod 8, as lanes_total wants */
		vf8 sg8 = {0}, sgx8 = {0};
		int j = 0;
		for (; j + LANES <= cols; j += LANES) {
			vf8 d = *(const vf8 *)(dyr + j);
			vf8 xhat = (*(const vf8 *)(xr + j) - mu) * rs, g = d * *(const vf8 *)(gamma + j);
			*(vf8 *)(dgamma + j) += d * xhat;
			*(vf8 *)(dbeta + j) += d;
			sg8 += g;
			sgx8 += g * xhat;
		}
		float sg[LANES], sgx[LANES];
		memcpy(sg, &sg8, sizeof(sg));
		memcpy(sgx, &sgx8, sizeof(sgx));
		for (; j < cols; j++) {
			float xhat = (xr[j] - mu) * rs, g = dyr[j] * gamma[j];
			dgamma[j] += dyr[j] * xhat;
			dbeta[j] += dyr[j];
			sg[j % LANES] += g;
			sgx[j % LANES] += g * xhat;
		}
		float mg = lanes_total(sg) / (float)cols, mgx = lanes_total(sgx) / (float)cols;
		if (!dx)
			continue;
		float *dxr = dx + (size_t)r * cols; /* may be dyr: read above, written now */
		for (j = 0; j < cols; j++)
			dxr[j] = ln_dx(dyr[j] * gamma[j], (xr[j] - mu) * rs, rs, mg, mgx);
	}
}

void cpu_embed(const struct backend *be, float *y, const float *ids, const float *table, int n,
	       int cols, int vocab)
{
	for (int i = 0; i < n; i++)
		memcpy(y + (size_t)i * cols, table + embed_row(ids[i], vocab) * (size_t)cols,
		       (size_t)cols * sizeof(float));
}

void cpu_embed_backward(const struct backend *be, float *dtable, const float *dy,
			const float *ids, int n, int cols, int vocab, int add)
{
	if (!add)
		memset(dtable, 0, (size_t)vocab * cols * sizeof(float));
	for (int i = 0; i < n; i++) {
		float *t = dtable + embed_row(ids[i], vocab) * (size_t)cols;
		const float *d = dy + (size_t)i * cols;
		for (int j = 0; j < cols; j++)
			t[j] += d[j];
	}
}
