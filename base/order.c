/* The computed order of order.h: a balanced Feistel network over the
 * smallest even number of bits that holds n, walked (cycle walking) until
 * the result falls in [0, n). Each round is a bijection of the pair (L, R)
 * whatever its round function, so the network is one; walking a
 * permutation of [0, 2^bits) from i < n until it lands below n stays in
 * i's cycle, so it is a permutation of [0, n). */
#include "order.h"

#include <string.h>

#define ROUNDS 6

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The round function: half bits of a hash of (r, round key). */
static uint64_t round_fn(uint64_t r, uint64_t key, uint64_t mask)
{
	return mix64(r * 0x9e3779b97f4a7c15ull ^ key) & mask;
}

uint64_t order_row(uint64_t seed, long epoch, uint64_t i, uint64_t n)
{
	if (n <= 1)
		return 0;
	int bits = 2;
	while (bits < 64 && (n - 1) >> bits)
		bits += 2;
	int half = bits / 2;
	uint64_t mask = (1ull << half) - 1;
	uint64_t keys[ROUNDS];
	uint64_t k = mix64(seed ^ 0x6f72646572ull) ^ mix64((uint64_t)epoch + 0x5851f42d4c957f2dull);
	for (int r = 0; r < ROUNDS; r++)
		keys[r] = k = mix64(k + 0x9e3779b97f4a7c15ull);
	uint64_t x = i;
	do {
		uint64_t left = x >> half, right = x & mask;
		for (int r = 0; r < ROUNDS; r++) {
			uint64_t t = right;
			right = left ^ round_fn(right, keys[r], mask);
			left = t;
		}
		x = left << half | right;
	} while (x >= n);
	return x;
}

const char *order_name(enum order_kind k)
{
	return k == ORDER_LEGACY ? ORDER_LEGACY_NAME : ORDER_FEISTEL_NAME;
}

int order_parse(const char *name, enum order_kind *k)
{
	if (!strcmp(name, ORDER_FEISTEL_NAME))
		*k = ORDER_FEISTEL;
	else if (!strcmp(name, ORDER_LEGACY_NAME))
		*k = ORDER_LEGACY;
	else
		return -1;
	return 0;
}
