/* Data sets of dataset.h as held: rows gathered from memory, labels
 * checked, a set freed (a streamed one's file, mapping and HDF5 handles
 * closed), a file's identity. Loading is dataset_load.c's (in a child),
 * streaming dataset_stream.c's. */
#include "dataset.h"
#include "dataset_io.h"
#include "log.h"
#include "shape.h"

#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void dataset_identity(const struct stat *st, long long id[4])
{
	id[ID_DEV] = (long long)st->st_dev;
	id[ID_INO] = (long long)st->st_ino;
	id[ID_SIZE] = (long long)st->st_size;
	id[ID_MTIME] = (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
}

void dataset_unmap(struct dataset *d)
{
	if (d->map)
		munmap((void *)d->map, d->map_len);
	d->map = NULL;
	d->map_len = 0;
}

/* Closes what dataset_open opened: the file, its mapping, and HDF5's
 * handles of it. */
static void close_stream(struct dataset *d)
{
	if (d->fd >= 0)
		close(d->fd);
	dataset_unmap(d);
	for (int i = H5_Y; i >= H5_FILE; i--)
		if (d->h5[i] > 0)
			(i == H5_FILE ? H5Fclose : H5Dclose)(d->h5[i]);
	d->fd = -1;
	memset(d->h5, 0, sizeof(d->h5));
	d->streamed = 0;
}

void dataset_free(struct dataset *d)
{
	if (d->streamed)
		close_stream(d);
	free(d->x8);
	free(d->xf);
	free(d->y);
	d->x8 = NULL;
	d->xf = NULL;
	d->y = NULL;
}

int dataset_check_labels(const struct dataset *d, int classes, const char *whose)
{
	for (long i = 0; i < d->n; i++)
		if (d->y[i] >= classes)
			return user_error("%s: y[%ld] = %d but %s has %d classes", d->path,
					  d->first + i, d->y[i], whose, classes);
	return 0;
}

void dataset_row_text(const struct dataset *d, char *buf, size_t len)
{
	const long row[3] = {d->shape[0], d->shape[1], d->shape[2]};
	if (dataset_row_is_flat(d->shape))
		shape_text(1, &row[2], buf, len);
	else
		shape_text(3, row, buf, len);
}

static void copy_row(const struct dataset *d, long row, float *x)
{
	size_t D = (size_t)d->dim;
	if (d->x8) {
		dataset_scale_u8(d->x8 + (size_t)row * D, D, x);
	} else {
		memcpy(x, d->xf + (size_t)row * D, D * sizeof(float));
	}
}

void dataset_gather(const struct dataset *d, const uint32_t *idx, int rows, float *x, int32_t *y)
{
	for (int i = 0; i < rows; i++) {
		copy_row(d, idx[i], x + (size_t)i * d->dim);
		y[i] = d->y[idx[i]];
	}
}

void dataset_rows(const struct dataset *d, long begin, int rows, float *x, int32_t *y)
{
	for (int i = 0; i < rows; i++) {
		copy_row(d, begin + i, x + (size_t)i * d->dim);
		y[i] = d->y[begin + i];
	}
}
