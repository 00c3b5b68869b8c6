/* The augmentation (src/augment.c): flip mirrors the columns or leaves the
 * image, about half the time each; crop:PAD is the image moved by an
 * offset of -PAD..PAD in each direction with zeros where it left, every
 * offset turning up; the choices are the same for the same (seed, epoch,
 * row) and change with each; a loader on 4 ranks stages bitwise the pixels
 * one rank does, the rows augment_row gives for their ids; unknown words
 * and flat rows are refused. */
#include "augment.h"
#include "backend.h"
#include "dataset.h"
#include "loader.h"
#include "log.h"
#include "unit.h"

#include <stdlib.h>

enum { H = 3, W = 4, C = 2, D = H * W * C, ROWS = 2000 };

/* Pixel (y, x, c) of the test image: distinct and never 0. */
static float pixel(int y, int x, int c) { return (float)(1 + 100 * y + 10 * x + c); }

static void image(float *x)
{
	for (int y = 0; y < H; y++)
		for (int i = 0; i < W; i++)
			for (int c = 0; c < C; c++)
				x[(y * W + i) * C + c] = pixel(y, i, c);
}

/* Whether out is the test image moved by (oy, ox) (out(y, x) = in(y + oy,
 * x + ox), 0 outside), mirrored first when mirror. */
static int moved(const float *out, int oy, int ox, int mirror)
{
	for (int y = 0; y < H; y++)
		for (int i = 0; i < W; i++)
			for (int c = 0; c < C; c++) {
				int sy = y + oy, sx = i + ox;
				float want = sy < 0 || sy >= H || sx < 0 || sx >= W ? 0.0f
					     : pixel(sy, mirror ? W - 1 - sx : sx, c);
				if (out[(y * W + i) * C + c] != want)
					return 0;
			}
	return 1;
}

static void test_flip(void)
{
	static const int shape[3] = {H, W, C};
	struct augment a;
	EXPECT(augment_init(&a, "flip", shape) == 0);
	int mirrored = 0, other = 0;
	for (int r = 0; r < ROWS; r++) {
		float x[D];
		image(x);
		augment_row(&a, x, 42, 0, (uint64_t)r);
		if (moved(x, 0, 0, 1))
			mirrored++;
		else if (!moved(x, 0, 0, 0))
			other++;
	}
	EXPECT(other == 0);
	EXPECT(mirrored > ROWS * 45 / 100 && mirrored < ROWS * 55 / 100);
	augment_free(&a);
}

/* crop:2 (then flip, in that order): each result is the image moved by
 * exactly one offset in -2..2 x -2..2, mirrored or not, zeros in the pad,
 * and all 25 offsets turn up. */
static void test_crop(void)
{
	static const int shape[3] = {H, W, C};
	struct augment a;
	EXPECT(augment_init(&a, "crop:2", shape) == 0);
	int seen[5][5] = {{0}}, bad = 0;
	for (int r = 0; r < ROWS; r++) {
		float x[D];
		image(x);
		augment_row(&a, x, 7, 3, (uint64_t)r);
		int matches = 0;
		for (int oy = -2; oy <= 2; oy++)
			for (int ox = -2; ox <= 2; ox++)
				if (moved(x, oy, ox, 0)) {
					matches++;
					seen[oy + 2][ox + 2]++;
				}
		bad += matches != 1;
	}
	EXPECT(bad == 0);
	for (int i = 0; i < 25; i++)
		EXPECT(seen[i / 5][i % 5] > 0);
	augment_free(&a);
	/* crop:1,flip: a crop, then the mirror of it (or not). */
	EXPECT(augment_init(&a, "crop:1,flip", shape) == 0);
	bad = 0;
	for (int r = 0; r < 200; r++) {
		float x[D], m[D];
		image(x);
		augment_row(&a, x, 7, 3, (uint64_t)r);
		memcpy(m, x, sizeof(m));
		for (int y = 0; y < H; y++) /* undo a flip: m mirrored */
			for (int i = 0; i < W; i++)
				memcpy(m + (y * W + i) * C, x + (y * W + W - 1 - i) * C, sizeof(float) * C);
		int ok = 0;
		for (int oy = -1; oy <= 1; oy++)
			for (int ox = -1; ox <= 1; ox++)
				ok |= moved(x, oy, ox, 0) || moved(m, oy, ox, 0);
		bad += !ok;
	}
	EXPECT(bad == 0);
	augment_free(&a);
}

/* The same (seed, epoch, row) gives the same pixels; another seed, epoch or
 * row other ones for most rows. */
static void test_keys(void)
{
	static const int shape[3] = {H, W, C};
	struct augment a;
	EXPECT(augment_init(&a, "crop:2,flip", shape) == 0);
	int same = 0, seed = 0, epoch = 0, row = 0;
	for (int r = 0; r < 200; r++) {
		float x0[D], x1[D], x2[D], x3[D], x4[D];
		image(x0), image(x1), image(x2), image(x3), image(x4);
		augment_row(&a, x0, 5, 2, (uint64_t)r);
		augment_row(&a, x1, 5, 2, (uint64_t)r);
		augment_row(&a, x2, 6, 2, (uint64_t)r);
		augment_row(&a, x3, 5, 3, (uint64_t)r);
		augment_row(&a, x4, 5, 2, (uint64_t)r + 1000);
		same += !memcmp(x0, x1, sizeof(x0));
		seed += !!memcmp(x0, x2, sizeof(x0));
		epoch += !!memcmp(x0, x3, sizeof(x0));
		row += !!memcmp(x0, x4, sizeof(x0));
	}
	EXPECT(same == 200);
	EXPECT(seed > 150 && epoch > 150 && row > 150);
	augment_free(&a);
}

/* Loaders of 1 and 4 ranks over the same image rows, augmented: each
 * global batch is bitwise the same pixels, and each row is augment_row of
 * its id; most rows are changed by it. */
static void test_ranks(void)
{
	enum { N = 48, B = 12, RANKS = 4 };
	static const int shape[3] = {H, W, C};
	const struct backend *be = backend_cpu();
	struct dataset d;
	memset(&d, 0, sizeof(d));
	d.n_total = d.n = N;
	d.dim = D;
	memcpy(d.shape, shape, sizeof(d.shape));
	d.classes = 2;
	d.xf = malloc(sizeof(float) * N * D); /* (N, H, W, C) */
	d.y = calloc(N, sizeof(int32_t));
	for (int r = 0; r < N; r++) {
		image(d.xf + r * D);
		d.xf[r * D] = (float)(1000 + r); /* each row its own */
	}
	struct augment a1, a4[RANKS], check;
	struct loader one, four[RANKS];
	EXPECT(augment_init(&a1, "crop:1,flip", shape) == 0);
	EXPECT(augment_init(&check, "crop:1,flip", shape) == 0);
	loader_init(&one, be, &d, 9, B, 0, 1, 2);
	one.aug = &a1;
	for (int r = 0; r < RANKS; r++) {
		EXPECT(augment_init(&a4[r], "crop:1,flip", shape) == 0);
		loader_init(&four[r], be, &d, 9, B, r, RANKS, 3);
		four[r].aug = &a4[r];
	}
	int differ = 0, wrong = 0, changed = 0;
	uint32_t perm[N];
	for (long e = 0; e < 3; e++) {
		loader_rows(one.order, 9, e, 0, N, N, perm); /* the order the loader stages */
		for (long pos = 0; pos < N / B; pos++) {
			struct staged *s1 = loader_current(&one, e, pos);
			int at = 0;
			for (int r = 0; r < RANKS; r++) {
				struct staged *s = loader_current(&four[r], e, pos);
				differ += memcmp(s->x, s1->x + at * D, sizeof(float) * s->rows * D) != 0;
				at += s->rows;
			}
			EXPECT(at == B);
			for (int i = 0; i < B; i++) {
				float x[D];
				memcpy(x, d.xf + perm[pos * B + i] * D, sizeof(x));
				augment_row(&check, x, 9, e, perm[pos * B + i]);
				wrong += memcmp(x, s1->x + i * D, sizeof(x)) != 0;
				changed += memcmp(d.xf + perm[pos * B + i] * D, s1->x + i * D,
						  sizeof(x)) != 0;
			}
		}
	}
	EXPECT(differ == 0);
	EXPECT(wrong == 0);
	EXPECT(changed > 3 * N / 2);
	loader_free(&one);
	augment_free(&a1);
	augment_free(&check);
	for (int r = 0; r < RANKS; r++) {
		loader_free(&four[r]);
		augment_free(&a4[r]);
	}
	free(d.xf);
	free(d.y);
}

static void test_refused(void)
{
	static const int img[3] = {H, W, C}, flat[3] = {1, 1, 12};
	static const char *const bad[] = {"flop", "crop", "crop:", "crop:0", "crop:x", "flip,",
					  ",flip", "flip,,flip", "flips", "crop:4:4"};
	struct augment a;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		user_error_clear();
		EXPECT(augment_init(&a, bad[i], img) == -1);
		EXPECT(contains(user_error_text(), "--augment"));
		augment_free(&a);
	}
	user_error_clear();
	EXPECT(augment_init(&a, "flip", flat) == -1);
	EXPECT(contains(user_error_text(), "needs image rows"));
	augment_free(&a);
	user_error_clear();
	EXPECT(augment_init(&a, "", flat) == 0 && a.n == 0);
	augment_free(&a);
	EXPECT(augment_init(&a, "crop:4,flip", img) == 0 && a.n == 2);
	EXPECT(a.op[0].kind == AUGMENT_CROP && a.op[0].pad == 4 && a.op[1].kind == AUGMENT_FLIP);
	augment_free(&a);
}

int main(void)
{
	test_flip();
	test_crop();
	test_keys();
	test_ranks();
	test_refused();
	return unit_done("test_augment");
}
