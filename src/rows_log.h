/* A test-only record of the rows each rank trains on
 * (MTRAIN_TEST_ROWS=PREFIX), so tests/mpi/once.sh can check that every row
 * is used once an epoch and that the global batches do not depend on the
 * number of ranks. Read once at start-up; unset, nothing is done per step.
 * Set, each rank appends to PREFIX.RANK one line per step that trains (a
 * step skipped for NaN/Inf gradients writes nothing; its retry, the same
 * rows, writes them once when it trains):
 *   STEP EPOCH POS RANK ID ID ...
 * the global step it made, the epoch and batch in the epoch it consumed,
 * and the global row ids (index in the training set) of this rank's rows,
 * in order. The ids are found from the rows' contents as staged (x and y
 * matched against the training set), so the record is what the loader
 * gathered, not what it meant to; a row that matches none, or two equal
 * rows of the set, is written as -1. A file of tokens' windows are
 * written as the id of their first token, their place in the split where
 * the test's tokens count up 0, 1, 2, ... (-1 for a window that does not).
 * Plain stdio, flushed at close. */
#pragma once
#include "dataset.h"

#include <stdint.h>
#include <stdio.h>

struct rows_log {
	FILE *f;                    /* NULL: off */
	const struct dataset *data; /* the whole training set (streamed: rows
				     * are read from its file to compare) */
	int rank;
	uint32_t *slot;             /* (cap) row + 1 per hash slot, 0 empty */
	size_t cap;                 /* a power of two above 2N */
	uint8_t *twin;              /* (N) 1 where another row is equal */
	float *row;                 /* (D) scratch */
	long *ids;                  /* (max rows) the staged batch's ids */
	int rows;                   /* of ids */
};

/* Off unless MTRAIN_TEST_ROWS is set; then opens PREFIX.rank for append
 * and indexes data's rows (up to max_rows a step). Warns and stays off
 * when the file cannot be opened. */
void rows_log_open(struct rows_log *r, const struct dataset *data, int rank, int max_rows);
/* The staged batch, x (rows, D) and y (rows), as the step will see it:
 * notes its rows' ids. */
void rows_log_stage(struct rows_log *r, const float *x, const int32_t *y, int rows);
/* The step that made global step step, from batch pos of epoch, trained:
 * writes its line. */
void rows_log_commit(struct rows_log *r, long step, long epoch, long pos);
/* Closes the file (flushing it) and frees the index. */
void rows_log_close(struct rows_log *r);
