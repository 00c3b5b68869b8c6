/* The computed order (base/order.c): order_row is a bijection of [0, n) for
 * small and odd n and, sampled, for a billion rows; it depends on the seed
 * and the epoch and on nothing else (no rank input: every rank computes
 * the same), and it looks shuffled (not the identity, no long runs of
 * consecutive rows, rows spread over the whole range). */
#include "order.h"
#include "unit.h"

#include <stdlib.h>

/* Whether i -> order_row(seed, epoch, i, n) is a permutation of [0, n). */
static int is_bijection(uint64_t seed, long epoch, uint64_t n)
{
	char *seen = calloc((size_t)n, 1);
	int ok = seen != NULL;
	for (uint64_t i = 0; ok && i < n; i++) {
		uint64_t r = order_row(seed, epoch, i, n);
		if (r >= n || seen[r])
			ok = 0;
		else
			seen[r] = 1;
	}
	free(seen);
	return ok;
}

/* The longest run of positions i, i+1, ... whose rows are consecutive
 * (r, r+1, ...), over the first count positions. */
static long longest_run(uint64_t seed, long epoch, uint64_t n, uint64_t count)
{
	long best = 1, run = 1;
	uint64_t prev = order_row(seed, epoch, 0, n);
	for (uint64_t i = 1; i < count; i++) {
		uint64_t r = order_row(seed, epoch, i, n);
		run = r == prev + 1 ? run + 1 : 1;
		best = run > best ? run : best;
		prev = r;
	}
	return best;
}

/* Rows at the same place under (seed, epoch) and under the other key, out of
 * the first count positions. */
static long same_places(uint64_t n, uint64_t count, uint64_t s2, long e2)
{
	long same = 0;
	for (uint64_t i = 0; i < count; i++)
		same += order_row(42, 3, i, n) == order_row(s2, e2, i, n);
	return same;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void check_bijections(void)
{
	static const uint64_t ns[] = {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 100, 1000, 4096, 60000,
				      65536, 65537};
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++)
		for (long e = 0; e < 3; e++)
			for (uint64_t seed = 0; seed < 3; seed++)
				if (!is_bijection(seed * 1000003 + 1, e, ns[k])) {
					fprintf(stderr, "n %llu seed %llu epoch %ld: not a bijection\n",
						(unsigned long long)ns[k],
						(unsigned long long)seed, e);
					EXPECT(0);
				}
	EXPECT(order_row(7, 0, 0, 1) == 0);
}

/* A billion rows: a sample of 200000 positions (spread over the first half
 * and the last 100000) gives distinct rows in range, spread over the
 * whole range. */
static void check_billion(void)
{
	enum { S = 200000 };
	const uint64_t n = 1000000000ull;
	uint64_t *rows = malloc(sizeof(uint64_t) * S);
	for (uint64_t i = 0; i < S; i++) {
		uint64_t at = i < S / 2 ? i * (n / S) + i % 7 : n - S + i; /* no position twice */
		rows[i] = order_row(42, 9, at, n);
		EXPECT(rows[i] < n);
	}
	qsort(rows, S, sizeof(uint64_t), cmp_u64);
	long dup = 0, low = 0;
	for (uint64_t i = 1; i < S; i++)
		dup += rows[i] == rows[i - 1];
	for (uint64_t i = 0; i < S; i++)
		low += rows[i] < n / 2;
	EXPECT(dup == 0);
	EXPECT(low > S * 45 / 100 && low < S * 55 / 100); /* about half below n/2 */
	free(rows);
}

static void check_keys_and_shuffle(void)
{
	const uint64_t n = 100000;
	/* the same key, the same order (what every rank relies on) */
	for (uint64_t i = 0; i < 1000; i++)
		EXPECT(order_row(42, 3, i, n) == order_row(42, 3, i, n));
	/* another seed or epoch: another order, rows at the same place about
	 * as often as chance (1 in n) */
	EXPECT(same_places(n, 10000, 43, 3) < 5);
	EXPECT(same_places(n, 10000, 42, 4) < 5);
	EXPECT(same_places(1000, 1000, 42, 2) < 10);
	/* not the identity, no long runs: shuffled */
	long fixed = 0;
	for (uint64_t i = 0; i < 10000; i++)
		fixed += order_row(42, 3, i, n) == i;
	EXPECT(fixed < 5);
	EXPECT(longest_run(42, 3, n, 20000) <= 3);
	EXPECT(longest_run(42, 0, 1000, 1000) <= 3);
	/* the first 10% of positions take rows from all over: each tenth of the
	 * rows gets about 10% of them */
	long tenth[10] = {0};
	for (uint64_t i = 0; i < n / 10; i++)
		tenth[order_row(42, 3, i, n) / (n / 10)]++;
	for (int t = 0; t < 10; t++)
		EXPECT(tenth[t] > 800 && tenth[t] < 1200);
}

static void check_names(void)
{
	enum order_kind k;
	EXPECT(order_parse(order_name(ORDER_FEISTEL), &k) == 0 && k == ORDER_FEISTEL);
	EXPECT(order_parse(order_name(ORDER_LEGACY), &k) == 0 && k == ORDER_LEGACY);
	EXPECT(!strcmp(order_name(ORDER_FEISTEL), "feistel-1"));
	EXPECT(order_parse("feistel-2", &k) == -1 && order_parse("?", &k) == -1);
}

int main(void)
{
	check_bijections();
	check_billion();
	check_keys_and_shuffle();
	check_names();
	return unit_done("test_order");
}
