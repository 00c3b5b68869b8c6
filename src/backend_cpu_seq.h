/* The CPU backend's sequence ops (attention's softmax, layer
 * normalization, embeddings; the batched products are backend_cpu.c's), defined in backend_cpu_seq.c
 * and registered in backend_cpu.c's table. Same signatures as their
 * struct backend slots (backend.h). */
#pragma once
#include "backend.h"

/* A hot loop compiled twice, for AVX2 (8 floats at a time) and for the
 * baseline (SSE2's 4), the CPU choosing at load time. The same float
 * operations in either (no FMA is enabled, no sum is reordered): the same
 * bits, faster where the CPU has AVX2. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CPU_WIDE __attribute__((target_clones("avx2", "default")))
#else
#define CPU_WIDE
#endif

/* Eight floats at any alignment (GCC's vector extension, Clang's too):
 * 256-bit instructions in CPU_WIDE's AVX2 clone, two 128-bit ones in the
 * baseline. For the loops GCC's vectoriser leaves scalar. */
typedef float vf8 __attribute__((vector_size(32), aligned(4), may_alias));

void cpu_softmax(const struct backend *be, float *y, const float *x, int rows, int cols,
		 float scale, int causal);
void cpu_softmax_backward(const struct backend *be, float *dx, const float *dy, const float *y,
			  int rows, int cols, float scale);
void cpu_ln_forward(const struct backend *be, float *y, float *mean, float *rstd, const float *x,
		    const float *gamma, const float *beta, int rows, int cols, float eps);
void cpu_ln_backward(const struct backend *be, float *dx, float *dgamma, float *dbeta,
		     const float *dy, const float *x, const float *mean, const float *rstd,
		     const float *gamma, int rows, int cols);
void cpu_embed(const struct backend *be, float *y, const float *ids, const float *table, int n,
	       int cols, int vocab);
void cpu_embed_backward(const struct backend *be, float *dtable, const float *dy,
			const float *ids, int n, int cols, int vocab, int add);
