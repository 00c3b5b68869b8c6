/* The augmentation of augment.h: pure copies of pixels (no arithmetic), so
 * the result is bitwise the same wherever it runs. */
#include "augment.h"
#include "check.h"
#include "log.h"
#include "rng.h"

#include <stdlib.h>
#include <string.h>

/* Each row's stream: bit 63 set (the epoch orders and the initial weights
 * use small streams), the epoch above bit 32, the row's id below. */
#define RNG_STREAM_AUGMENT (1ull << 63)

int augment_parse(struct augment *a, const char *list)
{
	memset(a, 0, sizeof(*a));
	const char *p = list;
	while (*p) {
		size_t len = strcspn(p, ",");
		char word[64];
		snprintf(word, sizeof(word), "%.*s", (int)(len < 63 ? len : 63), p);
		struct augment_op op = {AUGMENT_FLIP, 0};
		char *end;
		if (!strncmp(word, "crop:", 5)) {
			long pad = strtol(word + 5, &end, 10);
			if (end == word + 5 || *end || pad < 1 || pad > 4096)
				return user_error("--augment %s: '%s' needs a pad of 1 to 4096 pixels "
						  "(e.g. crop:4)", list, word);
			op = (struct augment_op){AUGMENT_CROP, (int)pad};
		} else if (strcmp(word, "flip") || len != 4) {
			return user_error("--augment %s: unknown '%s' (known: flip, crop:PAD; e.g. "
					  "crop:4,flip)", list, word);
		}
		if (a->n == AUGMENT_MAX_OPS)
			return user_error("--augment %s: more than %d steps", list, AUGMENT_MAX_OPS);
		a->op[a->n++] = op;
		p += len + (p[len] == ',');
		if (p[-1] == ',' && !*p)
			return user_error("--augment %s: ends in a comma", list);
	}
	return 0;
}

int augment_init(struct augment *a, const char *list, const int shape[3])
{
	if (augment_parse(a, list))
		return -1;
	if (a->n && shape[0] == 1 && shape[1] == 1)
		return user_error("--augment %s: needs image rows (H,W,C); the data's rows are flat "
				  "[%d] (give --input-shape H,W,C, or store x as [N,H,W,C])", list,
				  shape[2]);
	memcpy(a->shape, shape, sizeof(a->shape));
	if (a->n)
		a->tmp = xmalloc(sizeof(float) * (size_t)shape[0] * shape[1] * shape[2]);
	return 0;
}

void augment_free(struct augment *a)
{
	free(a->tmp);
	memset(a, 0, sizeof(*a));
}

/* x (H, W, C) mirrored left to right. */
static void flip(float *x, int H, int W, int C)
{
	for (int y = 0; y < H; y++)
		for (int i = 0, j = W - 1; i < j; i++, j--)
			for (int c = 0; c < C; c++) {
				float *l = x + ((size_t)y * W + i) * C, *r = x + ((size_t)y * W + j) * C;
				float t = l[c];
				l[c] = r[c];
				r[c] = t;
			}
}

/* x (H, W, C) = the H x W window at (dy, dx) of x padded by pad zeros on
 * each side: out(y, x) = in(y + dy - pad, x + dx - pad), 0 outside. */
static void crop(float *x, float *tmp, int H, int W, int C, int pad, int dy, int dx)
{
	memcpy(tmp, x, sizeof(float) * (size_t)H * W * C);
	for (int y = 0; y < H; y++) {
		int sy = y + dy - pad;
		for (int i = 0; i < W; i++) {
			int sx = i + dx - pad;
			float *o = x + ((size_t)y * W + i) * C;
			if (sy < 0 || sy >= H || sx < 0 || sx >= W)
				memset(o, 0, sizeof(float) * (size_t)C);
			else
				memcpy(o, tmp + ((size_t)sy * W + sx) * C, sizeof(float) * (size_t)C);
		}
	}
}

void augment_row(struct augment *a, float *x, uint64_t seed, long epoch, uint64_t row)
{
	struct rng r;
	rng_init(&r, seed, RNG_STREAM_AUGMENT | (uint64_t)epoch << 32 | (row & 0xffffffffull));
	int H = a->shape[0], W = a->shape[1], C = a->shape[2];
	for (int k = 0; k < a->n; k++) {
		const struct augment_op *op = &a->op[k];
		if (op->kind == AUGMENT_FLIP) {
			if (rng_below(&r, 2))
				flip(x, H, W, C);
		} else {
			int dy = (int)rng_below(&r, 2 * (uint64_t)op->pad + 1);
			int dx = (int)rng_below(&r, 2 * (uint64_t)op->pad + 1);
			crop(x, a->tmp, H, W, C, op->pad, dy, dx);
		}
	}
}

void augment_rows(struct augment *a, float *x, int rows, const uint32_t *idx, long first,
		  uint64_t seed, long epoch)
{
	size_t D = (size_t)a->shape[0] * a->shape[1] * a->shape[2];
	for (int i = 0; i < rows; i++)
		augment_row(a, x + (size_t)i * D, seed, epoch, (uint64_t)first + idx[i]);
}
