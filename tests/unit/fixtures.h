/* Fixture helpers shared by the unit tests: a fresh temp directory per
 * test, files written into it, removal of the whole tree, and in-memory
 * data sets. */
#pragma once
#include "dataset.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Creates a fresh directory "$TMPDIR/mtrain-unit-<tag>-XXXXXX" into dir.
 * Returns 0, or -1 after printing why. */
static inline int fixture_tmpdir(char *dir, size_t len, const char *tag)
{
	const char *base = getenv("TMPDIR");
	snprintf(dir, len, "%s/mtrain-unit-%s-XXXXXX", base && *base ? base : "/tmp", tag);
	if (!mkdtemp(dir)) {
		perror(dir);
		return -1;
	}
	return 0;
}

static inline int fixture_rm_entry(const char *path, const struct stat *st, int flag,
				   struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	if (remove(path))
		perror(path);
	return 0;
}

/* Removes dir and everything under it. */
static inline void fixture_rmtree(const char *dir)
{
	nftw(dir, fixture_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes len bytes to path (truncating). Returns 0, or -1 after printing why. */
static inline int fixture_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f) {
		perror(path);
		return -1;
	}
	size_t put = fwrite(data, 1, len, f);
	int rc = fclose(f);
	return put == len && rc == 0 ? 0 : -1;
}

/* The whole file at path in a malloc'd buffer (*len bytes), or NULL. */
static inline unsigned char *fixture_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	unsigned char *buf = NULL;
	size_t cap = 0, n = 0;
	for (;;) {
		if (n == cap) {
			cap = cap ? 2 * cap : 65536;
			unsigned char *grown = realloc(buf, cap);
			if (!grown) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = grown;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	*len = n;
	return buf;
}

/* An in-memory data set of rows flat rows of dim floats (shape [1,1,dim])
 * and classes classes, its values for the caller to fill: d->xf
 * (rows, dim) and d->y (rows). Free it with dataset_free. */
static inline void fixture_dataset(struct dataset *d, long rows, int dim, int classes)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->path, sizeof(d->path), "in-memory");
	d->n_total = d->n = rows;
	d->dim = dim;
	d->shape[0] = d->shape[1] = 1;
	d->shape[2] = dim;
	d->classes = classes;
	d->xf = malloc(sizeof(float) * (size_t)(rows * dim));
	d->y = malloc(sizeof(int32_t) * (size_t)rows);
}
