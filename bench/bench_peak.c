/* bench_peak: the peak this core can compute at, the ceiling bench/bench.sh
 * sets each model's step against (the step's FLOPs over its time, as a
 * fraction of it), measured three ways in one run:
 *   fp32_fma  a kernel of fused multiply-adds on registers alone (12
 *             independent accumulators, enough to keep two FMA units busy
 *             through their latency): AVX-512 where the CPU has it, else
 *             AVX2 with FMA; 2 FLOPs a lane an instruction;
 *   sgemm     one large OpenBLAS sgemm (1536 x 1536 x 1536), one thread:
 *             the most a real product reaches here;
 *   bf16_dot  vdpbf16ps on registers alone (AVX512_BF16: a pair of bf16
 *             products a lane, summed into fp32: 4 FLOPs a lane), or
 *             "none" where the CPU lacks it.
 * Run it on as many processes at once as ranks (mpirun -np N), so that the
 * cores share what they share (power, the memory bus) as in training.
 *
 * usage: bench_peak [SECONDS]   (each measure's time, default 0.5)
 * prints: peak fp32_fma gflops 76.8 isa avx2
 *         peak sgemm gflops 70.1 n 1536
 *         peak bf16_dot none (this CPU has no AVX512_BF16)
 * exit 1 on bad arguments or a wrong product. */
#include "bench_gemm.h"

#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>

#define ACC 12
#define GEMM_N 1536

/* The kernels' rounds: every accumulator gets one instruction a round.
 * Their sums are printed (never used otherwise) so that the compiler keeps
 * every instruction. */
__attribute__((target("avx2,fma"))) static float fma_avx2(long rounds)
{
	__m256 acc[ACC], x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
	for (int i = 0; i < ACC; i++)
		acc[i] = _mm256_set1_ps((float)i);
	for (long r = 0; r < rounds; r++)
		for (int i = 0; i < ACC; i++)
			acc[i] = _mm256_fmadd_ps(acc[i], x, y);
	__m256 s = acc[0];
	for (int i = 1; i < ACC; i++)
		s = _mm256_add_ps(s, acc[i]);
	float out[8];
	_mm256_storeu_ps(out, s);
	return out[0];
}

__attribute__((target("avx512f"))) static float fma_avx512(long rounds)
{
	__m512 acc[ACC], x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
	for (int i = 0; i < ACC; i++)
		acc[i] = _mm512_set1_ps((float)i);
	for (long r = 0; r < rounds; r++)
		for (int i = 0; i < ACC; i++)
			acc[i] = _mm512_fmadd_ps(acc[i], x, y);
	__m512 s = acc[0];
	for (int i = 1; i < ACC; i++)
		s = _mm512_add_ps(s, acc[i]);
	return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512bf16"))) static float dot_bf16(long rounds)
{
	__m512 acc[ACC];
	__m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), /* 1.0 */
		b = (__m512bh)_mm512_set1_epi16(0x3380);  /* 5.96e-8 */
	for (int i = 0; i < ACC; i++)
		acc[i] = _mm512_set1_ps((float)i);
	for (long r = 0; r < rounds; r++)
		for (int i = 0; i < ACC; i++)
			acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
	__m512 s = acc[0];
	for (int i = 1; i < ACC; i++)
		s = _mm512_add_ps(s, acc[i]);
	return _mm512_reduce_add_ps(s);
}

/* GFLOP/s of kernel over about seconds: rounds doubled until a run takes a
 * tenth of it, then the best of the runs that fill it. */
static double rate(float (*kernel)(long), double flops_per_round, double seconds, float *sink)
{
	long rounds = 1 << 16;
	double t;
	for (;;) {
		double t0 = bench_now();
		*sink += kernel(rounds);
		t = bench_now() - t0;
		if (t > seconds / 10)
			break;
		rounds *= 2;
	}
	double best = t;
	for (double end = bench_now() + seconds; bench_now() < end;) {
		double t0 = bench_now();
		*sink += kernel(rounds);
		t = bench_now() - t0;
		best = t < best ? t : best;
	}
	return flops_per_round * (double)rounds / best * 1e-9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 0.5;
	if (argc > 2 || !(seconds > 0 && seconds <= 60)) {
		fprintf(stderr, "usage: bench_peak [SECONDS]   (0 < SECONDS <= 60, default 0.5)\n");
		return 1;
	}
	openblas_set_num_threads(1);
	float sink = 0;
	int avx512 = __builtin_cpu_supports("avx512f");
	if (avx512)
		printf("peak fp32_fma gflops %.1f isa avx512\n",
		       rate(fma_avx512, 2.0 * 16 * ACC, seconds, &sink));
	else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		printf("peak fp32_fma gflops %.1f isa avx2\n",
		       rate(fma_avx2, 2.0 * 8 * ACC, seconds, &sink));
	else
		printf("peak fp32_fma none (this CPU has neither AVX-512 nor AVX2 with FMA)\n");

	struct gemm g = {.m = GEMM_N, .n = GEMM_N, .k = GEMM_N};
	float *a = bench_rand((size_t)GEMM_N * GEMM_N, -1.0f),
	      *b = bench_rand((size_t)GEMM_N * GEMM_N, -1.0f),
	      *c = bench_rand((size_t)GEMM_N * GEMM_N, 0.0f);
	g.a = a;
	g.b = b;
	g.c = c;
	gemm_run(&g);
	if (!gemm_check(&g, "bench_peak"))
		return 1;
	double best = 1e30;
	for (double end = bench_now() + seconds; bench_now() < end;) {
		double t0 = bench_now();
		gemm_run(&g);
		double t = bench_now() - t0;
		best = t < best ? t : best;
	}
	printf("peak sgemm gflops %.1f n %d\n", 2.0 * GEMM_N * GEMM_N * (double)GEMM_N / best * 1e-9,
	       GEMM_N);
	free(a);
	free(b);
	free(c);

	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16"))
		printf("peak bf16_dot gflops %.1f isa avx512_bf16\n",
		       rate(dot_bf16, 4.0 * 16 * ACC, seconds, &sink));
	else
		printf("peak bf16_dot none (this CPU has no AVX512_BF16)\n");
	fprintf(stderr, "%s", sink == 12345.678f ? " " : ""); /* keeps the kernels' sums */
	return 0;
}
