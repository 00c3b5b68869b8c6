/* mtrain preview: a PNG grid of training rows as the step sees them. */
#pragma once
#include "comm.h"

/* mtrain preview --data F [--input-shape H,W,C] [--augment LIST] [--rows N]
 * [--seed S] [--epoch E] --out FILE.png: rank 0 writes the first N rows of
 * epoch E's order under seed S, augmented as training would (row-major, a
 * 1-pixel black gap between images). Returns the exit status. */
int preview_main(int argc, char **argv, struct comm *c);
