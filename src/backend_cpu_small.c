/* Small products on the CPU (backend_cpu_small.h): for attention's
 * per-head products, 49 x 49 x 16 in the ViT, OpenBLAS' sgemm spends more
 * time packing its operands (and clearing c, its sgemm_beta) than
 * multiplying. Here b (not transposed) is read in panels of 16 columns, in
 * place where its rows hold them, else copied (a partial panel, padded
 * with zeros), and each block of 6 rows (then 2, then 1) x 16 columns of
 * c is summed in registers over k and written once: a 512-bit register a
 * row in CPU_WIDE's AVX-512 clone, two 256-bit ones in its AVX2 clone.
 *
 * Letters: c (m, n) = op(a) (m, k) @ b (k, n). */
#include "backend_cpu_small.h"
#include "backend_cpu_seq.h"

#include <stddef.h>
#include <string.h>

#define PANEL 16 /* columns of b (and of c) a block covers: one vf16 */
#define BLOCK 6	 /* rows of c a block covers: 6 accumulators (12 of AVX2's 16
		  * registers), then blocks of 2 and 1 for the rows left */

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

/* c's rows i .. i + rows - 1, columns j0 .. j0 + w - 1 (w <= 16): op(a)'s
 * rows times the panel, its rows ps floats apart. op(a)[i][p] lies at
 * a[i * si + p * sp]. rows (BLOCK, 2 or 1) is a constant once inlined, so
 * that the accumulators stay in registers. */
static inline __attribute__((always_inline)) void
block(float *c, int ldc, const float *a, size_t si, size_t sp, const float *panel, size_t ps,
      int k, int rows, int w, int accumulate)
{
	vf16 acc[BLOCK];
	for (int r = 0; r < rows; r++)
		acc[r] = (vf16){0};
	for (int p = 0; p < k; p++) {
		vf16 bp = *(const vf16 *)(panel + (size_t)p * ps);
		for (int r = 0; r < rows; r++)
			acc[r] += a[(size_t)r * si + (size_t)p * sp] * bp;
	}
	for (int r = 0; r < rows; r++) {
		float *cr = c + (size_t)r * ldc;
		if (w == PANEL) {
			if (accumulate)
				acc[r] += *(vf16 *)cr;
			*(vf16 *)cr = acc[r];
			continue;
		}
		float part[PANEL];
		memcpy(part, &acc[r], sizeof(part));
		for (int j = 0; j < w; j++)
			cr[j] = accumulate ? cr[j] + part[j] : part[j];
	}
}

/* The blocks of one panel: BLOCK rows at a time, then 2, then 1. */
static inline __attribute__((always_inline)) void
panel_rows(float *c, int ldc, const float *a, size_t si, size_t sp, const float *panel, size_t ps,
	   int m, int k, int w, int accumulate)
{
	int i = 0;
	for (; i + BLOCK <= m; i += BLOCK)
		block(c + (size_t)i * ldc, ldc, a + i * si, si, sp, panel, ps, k, BLOCK, w,
		      accumulate);
	for (; i + 2 <= m; i += 2)
		block(c + (size_t)i * ldc, ldc, a + i * si, si, sp, panel, ps, k, 2, w, accumulate);
	for (; i < m; i++)
		block(c + (size_t)i * ldc, ldc, a + i * si, si, sp, panel, ps, k, 1, w, accumulate);
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
			panel_rows(c + j0, ldc, a, si, sp, b + j0, (size_t)ldb, m, k, w, accumulate);
			continue;
		}
		pack_panel(panel, b, k, ldb, j0, w);
		panel_rows(c + j0, ldc, a, si, sp, panel, PANEL, m, k, w, accumulate);
	}
}
