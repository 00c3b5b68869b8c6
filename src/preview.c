/* The preview command of preview.h: the loader's order and augmentation,
 * the rows as bytes, a grid of them as a PNG. */
#include "preview.h"
#include "augment.h"
#include "check.h"
#include "config.h"
#include "dataset.h"
#include "loader.h"
#include "log.h"
#include "model.h"
#include "png_write.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GAP 1 /* black pixels between two rows' images */

enum { K_DATA, K_SHAPE, K_AUGMENT, K_ROWS, K_SEED, K_EPOCH, K_OUT, N_KEYS };

/* A non-negative integer of at most max, for flag name. 0 or -1. */
static int parse_count(const char *name, const char *v, long max, long *out)
{
	char *end;
	*out = strtol(v, &end, 10);
	if (!*v || *end || *out < 0 || *out > max)
		return user_error("preview: --%s '%s' is not an integer in 0..%ld", name, v, max);
	return 0;
}

/* The grid of rows images x (rows, H, W, C) into pix, cols images a line. */
static void grid(uint8_t *pix, const float *x, int rows, int cols, const int s[3], int gw)
{
	int H = s[0], W = s[1], C = s[2];
	for (int r = 0; r < rows; r++) {
		int oy = (r / cols) * (H + GAP), ox = (r % cols) * (W + GAP);
		for (int y = 0; y < H; y++)
			for (int i = 0; i < W * C; i++) {
				float v = x[((size_t)r * H + y) * W * C + i];
				v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
				pix[((size_t)(oy + y) * gw + ox) * C + i] = (uint8_t)lrintf(v * 255.0f);
			}
	}
}

/* Rank 0's work: d opened, the rows picked and read, augmented and written. */
static int preview_write(struct config *cfg, const char *list, long rows, long epoch,
			 const char *out)
{
	struct dataset d;
	struct augment a;
	int in[3], rc = -1;
	memset(&d, 0, sizeof(d));
	memset(&a, 0, sizeof(a));
	if (dataset_open(&d, cfg->data, 0, 1) || model_input_shape(cfg, cfg->data, d.shape, in) ||
	    augment_init(&a, list, in))
		goto done;
	if (in[0] == 1 && in[1] == 1) {
		user_error("preview: %s has flat rows; give --input-shape H,W,C", cfg->data);
		goto done;
	}
	if (in[2] != 1 && in[2] != 3) {
		user_error("preview: a picture needs 1 (grayscale) or 3 (RGB) channels; the rows have %d",
			   in[2]);
		goto done;
	}
	rows = rows < d.n ? rows : d.n;
	int cols = (int)ceil(sqrt((double)rows)), lines = (int)((rows + cols - 1) / cols);
	int gw = cols * (in[1] + GAP) - GAP, gh = lines * (in[0] + GAP) - GAP;
	uint32_t *ids = xmalloc(sizeof(uint32_t) * (size_t)rows);
	float *x = xmalloc(sizeof(float) * (size_t)rows * d.dim);
	int32_t *y = xmalloc(sizeof(int32_t) * (size_t)rows);
	uint8_t *pix = calloc((size_t)gw * gh * in[2], 1);
	ALLOC_CHECK(pix);
	loader_rows(ORDER_FEISTEL, cfg->seed, epoch, 0, (int)rows, d.n, ids); /* a fresh run's */
	char why[DATASET_WHY_LEN];
	if (dataset_read_rows(&d, ids, (int)rows, x, y, why)) {
		user_error("%s", why);
	} else {
		if (a.n)
			augment_rows(&a, x, (int)rows, ids, d.first, cfg->seed, epoch);
		grid(pix, x, (int)rows, cols, in, gw);
		rc = png_write(out, pix, gw, gh, in[2]);
	}
	if (rc == 0)
		log_info("wrote %s: %ld rows of epoch %ld (seed %llu, augment '%s'), %dx%d pixels", out,
			 rows, epoch, (unsigned long long)cfg->seed, list, gw, gh);
	free(ids);
	free(x);
	free(y);
	free(pix);
done:
	augment_free(&a);
	dataset_free(&d);
	return rc;
}

int preview_main(int argc, char **argv, struct comm *c)
{
	static const char *const keys[N_KEYS] = {"data", "input-shape", "augment", "rows",
						 "seed", "epoch", "out"};
	const char *vals[N_KEYS] = {0};
	struct config cfg;
	config_defaults(&cfg);
	long rows = 64, epoch = 0;
	for (int i = 0; i < argc && !user_error_pending(); i += 2) {
		int k = 0;
		while (k < N_KEYS && (strncmp(argv[i], "--", 2) || strcmp(argv[i] + 2, keys[k])))
			k++;
		if (k == N_KEYS)
			user_error("preview: unexpected argument '%s' (see mtrain --help)", argv[i]);
		else if (i + 1 == argc)
			user_error("preview: %s: missing value", argv[i]);
		else
			vals[k] = argv[i + 1];
	}
	if (!user_error_pending() && (!vals[K_DATA] || !vals[K_OUT]))
		user_error("preview: --data FILE and --out FILE.png are required");
	long seed = 0;
	snprintf(cfg.data, PATH_LEN, "%s", vals[K_DATA] ? vals[K_DATA] : "");
	snprintf(cfg.input_shape, PATH_LEN, "%s", vals[K_SHAPE] ? vals[K_SHAPE] : "");
	if (!user_error_pending() &&
	    (!vals[K_SEED] || !parse_count("seed", vals[K_SEED], LONG_MAX, &seed)) &&
	    (!vals[K_ROWS] || !parse_count("rows", vals[K_ROWS], 1 << 16, &rows)) &&
	    (!vals[K_EPOCH] || !parse_count("epoch", vals[K_EPOCH], 1L << 30, &epoch)) &&
	    rows < 1)
		user_error("preview: --rows must be at least 1");
	if (vals[K_SEED])
		cfg.seed = (uint64_t)seed;
	if (!user_error_pending() && c->rank == 0)
		preview_write(&cfg, vals[K_AUGMENT] ? vals[K_AUGMENT] : "", rows, epoch, vals[K_OUT]);
	return comm_user_errors(c) ? EXIT_USER : EXIT_OK;
}
