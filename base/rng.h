/* Deterministic random numbers: the same seed gives the same stream on every
 * rank, every machine and every build (no libc rand). */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct rng {
	uint64_t s[4]; /* xoshiro256** state */
};

/* Seeds from (seed, stream): distinct streams are independent. */
void rng_init(struct rng *r, uint64_t seed, uint64_t stream);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, 1) with 24 random bits. */
float rng_uniform(struct rng *r);
/* Uniform integer in [0, n). */
uint64_t rng_below(struct rng *r, uint64_t n);
/* perm (n) = a permutation of 0..n-1 (Fisher-Yates). */
void rng_permutation(struct rng *r, uint32_t *perm, size_t n);
