/* The CPU backend's sequence ops (backend_cpu_seq.h): the attention's
 * masked softmax, layer normalization and the embedding's look-up (its
 * batched products are backend_cpu.c's, with the others), as loops over the
 * formulas of mathfn_seq.h. Sums run in a fixed order (double for a row's
 * moments), so results are the same bits run after run. */
#include "backend_cpu_seq.h"

#include <math.h>
#include <string.h>

/* Rows r0 .. r1 - 1 of cpu_softmax, in blocks that start a C x C
 * block's query. */
CPU_WIDE static void softmax_part(float *y, const float *x, int r0, int r1, int cols, float scale,
				  int causal)
{
	for (int r = r0; r < r1;) {
		int q = r % cols, n = cols - q < SOFTMAX_BLOCK ? cols - q : SOFTMAX_BLOCK;
		n = r1 - r < n ? r1 - r : n;
		softmax_rows(y + (size_t)r * cols, (size_t)cols, x + (size_t)r * cols,
			     (size_t)cols, n, cols, q, scale, causal);
		r += n;
	}
}

void cpu_softmax(const struct backend *be, float *y, const float *x, int rows, int cols,
		 float scale, int causal)
{
	CPU_SPLIT((size_t)rows, cpu_rows_grain(cols), part, r0, r1,
		  { softmax_part(y, x, (int)r0, (int)r1, cols, scale, causal); });
}

CPU_WIDE static void softmax_backward_part(float *dx, const float *dy, const float *y, int r0,
					   int r1, int cols, float scale)
{
	for (int r = r0; r < r1; r++)
		softmax_backward_row(dx + (size_t)r * cols, dy + (size_t)r * cols,
				     y + (size_t)r * cols, cols, scale);
}

void cpu_softmax_backward(const struct backend *be, float *dx, const float *dy, const float *y,
			  int rows, int cols, float scale)
{
	CPU_SPLIT((size_t)rows, cpu_rows_grain(cols), part, r0, r1,
		  { softmax_backward_part(dx, dy, y, (int)r0, (int)r1, cols, scale); });
}

CPU_WIDE static void ln_forward_part(float *y, float *mean, float *rstd, const float *x,
				     const float *gamma, const float *beta, int r0, int r1,
				     int cols, float eps)
{
	for (int r = r0; r < r1; r++) {
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

void cpu_ln_forward(const struct backend *be, float *y, float *mean, float *rstd, const float *x,
		    const float *gamma, const float *beta, int rows, int cols, float eps)
{
	CPU_SPLIT((size_t)rows, cpu_rows_grain(cols), part, r0, r1, {
		ln_forward_part(y, mean, rstd, x, gamma, beta, (int)r0, (int)r1, cols, eps);
	});
}

/* Rows r0 .. r1 - 1 of layer normalization's backward: dx (unless NULL)
 * and, unless dgamma is NULL, their terms added to dgamma and dbeta, row
 * after row. */
CPU_WIDE static void ln_backward_rows(float *dx, float *dgamma, float *dbeta, const float *dy,
				      const float *x, const float *mean, const float *rstd,
				      const float *gamma, int r0, int r1, int cols)
{
	for (int r = r0; r < r1; r++) {
		const float *dyr = dy + (size_t)r * cols, *xr = x + (size_t)r * cols;
		float mu = mean[r], rs = rstd[r];
		/* lane l sums the columns j = l mod 8, as lanes_total wants */
		vf8 sg8 = {0}, sgx8 = {0};
		int j = 0;
		for (; j + LANES <= cols; j += LANES) {
			vf8 d = *(const vf8 *)(dyr + j);
			vf8 xhat = (*(const vf8 *)(xr + j) - mu) * rs, g = d * *(const vf8 *)(gamma + j);
			if (dgamma) {
				*(vf8 *)(dgamma + j) += d * xhat;
				*(vf8 *)(dbeta + j) += d;
			}
			sg8 += g;
			sgx8 += g * xhat;
		}
		float sg[LANES], sgx[LANES];
		memcpy(sg, &sg8, sizeof(sg));
		memcpy(sgx, &sgx8, sizeof(sgx));
		for (; j < cols; j++) {
			float xhat = (xr[j] - mu) * rs, g = dyr[j] * gamma[j];
			if (dgamma) {
				dgamma[j] += dyr[j] * xhat;
				dbeta[j] += dyr[j];
			}
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

/* dgamma's and dbeta's columns j0 .. j1 - 1: the same terms as
 * ln_backward_rows adds, over every row in order; sixteen columns at a
 * time in registers. */
CPU_WIDE static void ln_param_cols(float *dgamma, float *dbeta, const float *dy, const float *x,
				   const float *mean, const float *rstd, int rows, int cols,
				   int j0, int j1)
{
	int j = j0;
	for (; j + 16 <= j1; j += 16) {
		vf16 g = {0}, b = {0};
		for (int r = 0; r < rows; r++) {
			size_t at = (size_t)r * cols + j;
			vf16 d = *(const vf16 *)(dy + at);
			g += d * ((*(const vf16 *)(x + at) - mean[r]) * rstd[r]);
			b += d;
		}
		*(vf16 *)(dgamma + j) = g;
		*(vf16 *)(dbeta + j) = b;
	}
	for (; j < j1; j++) {
		float g = 0.0f, b = 0.0f;
		for (int r = 0; r < rows; r++) {
			size_t at = (size_t)r * cols + j;
			g += dy[at] * ((x[at] - mean[r]) * rstd[r]);
			b += dy[at];
		}
		dgamma[j] = g;
		dbeta[j] = b;
	}
}

/* One pass over the rows on one thread (two would cost a ViT step 1 ms
 * more); on several, the parameters' sums first, the threads sharing out
 * their columns, then dx, the threads sharing out the rows (dx may be
 * dy). */
void cpu_ln_backward(const struct backend *be, float *dx, float *dgamma, float *dbeta,
		     const float *dy, const float *x, const float *mean, const float *rstd,
		     const float *gamma, int rows, int cols)
{
	size_t grain = cpu_rows_grain(cols);
	if (cpu_split_parts((size_t)rows, grain) < 2) {
		memset(dgamma, 0, (size_t)cols * sizeof(float));
		memset(dbeta, 0, (size_t)cols * sizeof(float));
		ln_backward_rows(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, 0, rows, cols);
		return;
	}
	CPU_SPLIT(cpu_col_vecs(cols), 1, part, v0, v1, {
		ln_param_cols(dgamma, dbeta, dy, x, mean, rstd, rows, cols, cpu_vec_col(v0, cols),
			      cpu_vec_col(v1, cols));
	});
	if (dx)
		CPU_SPLIT((size_t)rows, grain, part, r0, r1, {
			ln_backward_rows(dx, NULL, NULL, dy, x, mean, rstd, gamma, (int)r0,
					 (int)r1, cols);
		});
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
