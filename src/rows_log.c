/* The test record of rows_log.h. */
#include "rows_log.h"
#include "check.h"
#include "hash.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

/* The hash of a row as staged: its D values and its label. */
static uint64_t row_hash(const float *x, int32_t y, int dim)
{
	return fnv1a64(fnv1a64(FNV1A64_INIT, x, sizeof(float) * (size_t)dim), &y, sizeof(y));
}

/* Whether row i of the set is x, y (scratch: r->row). */
static int row_equal(struct rows_log *r, long i, const float *x, int32_t y)
{
	int32_t yi;
	char why[DATASET_WHY_LEN];
	return dataset_read_range(r->data, i, 1, r->row, &yi, why) == 0 && yi == y &&
	       !memcmp(r->row, x, sizeof(float) * (size_t)r->data->dim);
}

/* The slot holding a row equal to x, y, else the empty slot where it
 * would go. */
static size_t row_find(struct rows_log *r, const float *x, int32_t y)
{
	size_t k = (size_t)row_hash(x, y, r->data->dim) & (r->cap - 1);
	while (r->slot[k] && !row_equal(r, (long)r->slot[k] - 1, x, y))
		k = (k + 1) & (r->cap - 1);
	return k;
}

void rows_log_open(struct rows_log *r, const struct dataset *data, int rank, int max_rows)
{
	memset(r, 0, sizeof(*r));
	const char *prefix = getenv("MTRAIN_TEST_ROWS");
	if (!prefix || !*prefix)
		return;
	char path[PATH_LEN];
	snprintf(path, sizeof(path), "%s.%d", prefix, rank);
	r->f = fopen(path, "a");
	if (!r->f) {
		log_warn("MTRAIN_TEST_ROWS: cannot open %s; not recording rows", path);
		return;
	}
	r->data = data;
	r->rank = rank;
	r->ids = xmalloc(sizeof(long) * (size_t)max_rows);
	if (data->tokens) /* windows: found by their first token (window_id) */
		return;
	for (r->cap = 2; r->cap < 2 * (size_t)data->n; r->cap *= 2)
		;
	r->slot = xcalloc(r->cap, sizeof(*r->slot));
	r->twin = xcalloc((size_t)data->n, 1);
	r->row = xmalloc(sizeof(float) * (size_t)data->dim);
	float *x = xmalloc(sizeof(float) * (size_t)data->dim);
	for (long i = 0; i < data->n; i++) {
		int32_t y;
		char why[DATASET_WHY_LEN];
		if (dataset_read_range(data, i, 1, x, &y, why))
			continue; /* a bad row: the run stops when it reaches it */
		size_t k = row_find(r, x, y);
		if (r->slot[k])
			r->twin[i] = r->twin[r->slot[k] - 1] = 1;
		else
			r->slot[k] = (uint32_t)(i + 1);
	}
	free(x);
}

/* A window of a file of tokens whose ids count up from its first (the
 * test's tokens 0, 1, 2, ...): that first id, the window's place in the
 * split; -1 when its T inputs and T next tokens do not count up so. */
static long window_id(const float *x, const int32_t *y, int T)
{
	long first = (long)x[0];
	for (int j = 0; j < T; j++)
		if ((long)x[j] != first + j || (long)y[j] != first + j + 1)
			return -1;
	return first;
}

void rows_log_stage(struct rows_log *r, const float *x, const int32_t *y, int rows)
{
	if (!r->f)
		return;
	int T = r->data->window;
	for (int i = 0; r->data->tokens && i < rows; i++)
		r->ids[i] = window_id(x + (size_t)i * T, y + (size_t)i * T, T);
	for (int i = 0; !r->data->tokens && i < rows; i++) {
		size_t k = row_find(r, x + (size_t)i * (size_t)r->data->dim, y[i]);
		long id = (long)r->slot[k] - 1;
		r->ids[i] = id < 0 || r->twin[id] ? -1 : r->data->first + id;
	}
	r->rows = rows;
}

void rows_log_commit(struct rows_log *r, long step, long epoch, long pos)
{
	if (!r->f)
		return;
	fprintf(r->f, "%ld %ld %ld %d", step, epoch, pos, r->rank);
	for (int i = 0; i < r->rows; i++)
		fprintf(r->f, " %ld", r->ids[i]);
	fputc('\n', r->f);
}

void rows_log_close(struct rows_log *r)
{
	if (r->f)
		fclose(r->f);
	free(r->slot);
	free(r->twin);
	free(r->row);
	free(r->ids);
	memset(r, 0, sizeof(*r));
}
