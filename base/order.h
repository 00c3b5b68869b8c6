/* The order of an epoch's rows, computed rather than stored: position i of
 * epoch e's order is order_row(seed, e, i, n), a keyed bijection over
 * [0, n) (a cycle-walking Feistel network), so a billion rows cost no
 * memory. It has no rank input: every rank computes the same order. */
#pragma once
#include <stdint.h>

/* The orders a run can have; a checkpoint names its run's (ckpt_meta.order). */
enum order_kind {
	ORDER_FEISTEL, /* order_row: what a fresh run uses */
	ORDER_LEGACY   /* the stored Fisher-Yates permutation of runs begun
			* before the computed order (loader_order) */
};
#define ORDER_FEISTEL_NAME "feistel-1"
#define ORDER_LEGACY_NAME "fisher-yates-1"

/* The row at position i (< n) of epoch's order under seed: for a fixed
 * (seed, epoch, n), i -> order_row is a permutation of [0, n). O(1) memory;
 * about four Feistel passes on average. n may be up to 2^62. */
uint64_t order_row(uint64_t seed, long epoch, uint64_t i, uint64_t n);
/* The name a checkpoint records for k, e.g. "feistel-1". */
const char *order_name(enum order_kind k);
/* *k = the order called name: 0, or -1 for a name this mtrain does not know. */
int order_parse(const char *name, enum order_kind *k);
