/* xoshiro256** seeded through splitmix64 (public-domain algorithms by
 * Blackman and Vigna), written out here. */
#include "rng.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void rng_init(struct rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * 0xd1342543de82ef95ull + 0x2545f4914f6cdd1dull);
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

float rng_uniform(struct rng *r)
{
	return (float)(rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
	/* Rejection keeps it unbiased. */
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	uint64_t x;
	do
		x = rng_next(r);
	while (x >= limit);
	return x % n;
}

void rng_permutation(struct rng *r, uint32_t *perm, size_t n)
{
	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)rng_below(r, i);
		uint32_t t = perm[i - 1];
		perm[i - 1] = perm[j];
		perm[j] = t;
	}
}
