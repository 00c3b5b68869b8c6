/* The CPU backend's products too small for OpenBLAS: attention's per-head
 * products (a head's T x T scores over K = D / H values, and back), which
 * matmul_batched makes one a row and a head. Defined in backend_cpu_small.c,
 * called by backend_cpu.c's matmul_batched. */
#pragma once

/* The widest n and k the small path takes (m is free): a product with
 * n or k over these goes to OpenBLAS, whose packing then pays. */
#define CPU_SMALL_MAX_N 64
#define CPU_SMALL_MAX_K 64

/* Whether cpu_small_matmul takes an m x n x k product. Not with b
 * transposed (attention's scores, q_h k_h^T, and d p_h = do_h v_h^T): its
 * columns must then be gathered into panels, and OpenBLAS' own packing
 * does that faster (1.9 against 2.5 us a 49 x 49 x 16 product here, the
 * best of 8 runs, where the small path takes 1.46 against 1.97 for the
 * 49 x 16 x 49 one and 1.53 against 1.79 with a transposed). */
static inline int cpu_small_fits(int m, int n, int k, int tb)
{
	return !tb && m > 0 && n > 0 && k > 0 && n <= CPU_SMALL_MAX_N && k <= CPU_SMALL_MAX_K;
}

/* c (m, n) = op(a) (m, k) @ b (k, n), plus c's own values when
 * accumulate, as the backend's matmul with beta 0 or 1 (backend.h): a
 * stored (k, m) when ta, rows lda, ldb, ldc floats
 * apart. Each c[i][j] is the sum over p in order of products rounded to
 * float (no fused multiply-add), so the bits are the same on every x86
 * CPU, AVX2 or not. n and k within cpu_small_fits, or n whole panels of
 * 16 (b read in place, nothing packed) and any k. */
void cpu_small_matmul(float *c, const float *a, const float *b, int m, int n, int k, int ta,
		      int accumulate, int lda, int ldb, int ldc);
