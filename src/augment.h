/* Augmentation of training rows (--augment): flips and crops of images
 * whose random choices are a function of (seed, epoch, the row's id in the
 * data set) only, so a global batch is the same pixels on any number of
 * ranks and after a resume. The loader calls augment_rows as it stages a
 * batch; evaluation never does. */
#pragma once
#include <stdint.h>

#define AUGMENT_MAX_OPS 16

enum augment_kind { AUGMENT_FLIP, AUGMENT_CROP };

struct augment_op {
	enum augment_kind kind;
	int pad; /* AUGMENT_CROP: pixels of zeros on each side, e.g. 4 */
};

struct augment {
	struct augment_op op[AUGMENT_MAX_OPS]; /* in the order written */
	int n;          /* 0: none */
	int shape[3];   /* a row's {H, W, C}, e.g. {32, 32, 3} */
	float *tmp;     /* (H, W, C) scratch: one augment per thread */
};

/* Parses list ("crop:4,flip"; "" for none) into a's ops. 0, or -1 with a
 * user_error naming the unknown word. */
int augment_parse(struct augment *a, const char *list);
/* augment_parse, then checks the rows are images (shape {H, W, C} with H or
 * W above 1) when list names any op, and allocates the scratch. 0, or -1
 * with a user_error. */
int augment_init(struct augment *a, const char *list, const int shape[3]);
void augment_free(struct augment *a);
/* x (H, W, C) = row's augmentation in epoch under seed, in place. */
void augment_row(struct augment *a, float *x, uint64_t seed, long epoch, uint64_t row);
/* Rows x (rows, H*W*C) of ids first + idx[0..rows) (ids in the data set),
 * each augmented by augment_row. */
void augment_rows(struct augment *a, float *x, int rows, const uint32_t *idx, long first,
		  uint64_t seed, long epoch);
