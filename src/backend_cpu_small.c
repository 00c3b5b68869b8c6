/* Small products on the CPU (backend_cpu_small.h): for attention's
 * per-head products, 49 x 49 x 16 in the ViT, OpenBLAS' sgemm spends more
 * time packing its operands (and clearing c, its sgemm_beta) than
 * multiplying. Here b (not transposed) is read in panels of 16 columns, in
 * place where its rows hold them, else copied (a partial panel, padded
 * with zeros), and each block of 4 rows x 16 columns of c is summed in
 * registers over k and written once.
 *
 * Letters: c (m, n) = op(a) (m, k) @ b (k, n). */
#include "backend_cpu_small.h"
#include "backend_cpu_seq.h"

#include <stddef.h>

#define PANEL 16 /* columns of b (and of c) a block covers: two vectors of 8 */
#define BLOCK 4	 /* rows of c a block covers */

/* panel (k, 16) = b's columns j0 .. j0 + w - 1, zeros past w. */
static inline void pack_panel(float *panel, const float *b, int k, int ldb, int j0, int w)
{
	for (int p = 0; p < k; p++) {
		float *row = panel + (size_t)p * PANEL;
		for (int j = 0; j < w; j++)
			row[j] = b[(size_t)p * ldb + j0 + j];
		for (int j = w; j < PANEL; j++)
			row[j] = 0.0f;
	}
}

/* c's rows i .. i + rows - 1, columns j0 .. j0 + w - 1: op(a)'s rows times
 * the panel's first vecs * 8 columns (w <= vecs * 8), its rows ps floats
 * apart. op(a)[i][p] lies at
 * a[i * si + p * sp]. rows (BLOCK or 1) and vecs (2, or 1 for a panel's
 * tail of 8 columns or fewer) are constants once inlined, so that the
 * accumulators stay in registers. */
static inline __attribute__((always_inline)) void
block(float *c, int ldc, const float *a, size_t si, size_t sp, const float *panel, size_t ps,
      int k, int rows, int vecs, int w, int accumulate)
{
	vf8 acc[BLOCK][2];
	for (int r = 0; r < rows; r++)
		for (int v = 0; v < vecs; v++)
			acc[r][v] = (vf8){0};
	for (int p = 0; p < k; p++) {
		const float *bp = panel + (size_t)p * ps;
		for (int r = 0; r < rows; r++) {
			float av = a[(size_t)r * si + (size_t)p * sp];
			for (int v = 0; v < vecs; v++)
				acc[r][v] += av * *(const vf8 *)(bp + 8 * v);
		}
	}
	for (int r = 0; r < rows; r++) {
		float *cr = c + (size_t)r * ldc;
		if (w == 8 * vecs) {
			vf8 *out = (vf8 *)cr;
			for (int v = 0; v < vecs; v++) {
				if (accumulate)
					acc[r][v] += out[v];
				out[v] = acc[r][v];
			}
			continue;
		}
		union {
			vf8 v[2];
			float f[PANEL];
		} part;
		for (int v = 0; v < vecs; v++)
			part.v[v] = acc[r][v];
		for (int j = 0; j < w; j++)
			cr[j] = accumulate ? cr[j] + part.f[j] : part.f[j];
	}
}

/* The blocks of one panel: BLOCK rows at a time, then the rows left. */
static inline __attribute__((always_inline)) void
panel_rows(float *c, int ldc, const float *a, size_t si, size_t sp, const float *panel, size_t ps,
	   int m, int k, int vecs, int w, int accumulate)
{
	int i = 0;
	for (; i + BLOCK <= m; i += BLOCK)
		block(c + (size_t)i * ldc, ldc, a + i * si, si, sp, panel, ps, k, BLOCK, vecs, w,
		      accumulate);
	for (; i < m; i++)
		block(c + (size_t)i * ldc, ldc, a + i * si, si, sp, panel, ps, k, 1, vecs, w,
		      accumulate);
}

CPU_WIDE void cpu_small_matmul(float *c, const float *a, const float *b, int m, int n, int k,
			       int ta, int accumulate, int lda, int ldb, int ldc)
{
	float panel[CPU_SMALL_MAX_K * PANEL] __attribute__((aligned(64)));
	/* op(a)[i][p]: a[i][p], or a[p][i] when a is stored transposed */
	size_t si = ta ? 1 : (size_t)lda, sp = ta ? (size_t)lda : 1;
	for (int j0 = 0; j0 < n; j0 += PANEL) {
		int w = n - j0 < PANEL ? n - j0 : PANEL;
		if (w == PANEL) { /* b's own rows serve as the panel, uncopied */
			panel_rows(c + j0, ldc, a, si, sp, b + j0, (size_t)ldb, m, k, 2, w, accumulate);
			continue;
		}
		pack_panel(panel, b, k, ldb, j0, w);
		if (w > 8)
			panel_rows(c + j0, ldc, a, si, sp, panel, PANEL, m, k, 2, w, accumulate);
		else
			panel_rows(c + j0, ldc, a, si, sp, panel, PANEL, m, k, 1, w, accumulate);
	}
}
