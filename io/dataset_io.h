/* What io/dataset.c (a set held, gathered and freed), dataset_load.c
 * (loading in a child), dataset_file.c (the file's layout and rows, read
 * through HDF5), dataset_bytes.c (a file's bytes where they lie),
 * dataset_tokens.c (token windows), dataset_write.c and dataset_stream.c
 * (streamed reading) share; not for other modules. */
#pragma once
#include "dataset.h"

/* The HDF5 handles of a streamed dataset read through HDF5 (h5[]). */
enum { H5_FILE, H5_X, H5_Y };

/* x (n) = bytes (n) scaled to [0, 1]: how every reader turns uint8 inputs
 * into floats (loaded or streamed, the same floats). */
static inline void dataset_scale_u8(const uint8_t *restrict bytes, size_t n, float *restrict x)
{
	for (size_t j = 0; j < n; j++)
		x[j] = (float)bytes[j] * (1.0f / 255.0f);
}

/* A row {1, 1, D}: x stored as [N, D] (or as [N, 1, 1, D], the same). */
static inline int dataset_row_is_flat(const int row[3])
{
	return row[0] == 1 && row[1] == 1;
}

/* Which of identity[] is which. */
enum { ID_DEV, ID_INO, ID_SIZE, ID_MTIME };

/* Loads path's rows [part*N/parts, (part+1)*N/parts) in a child
 * (sandbox.h), or with streamed its layout only (what dataset_open then
 * opens). 0, or -1 with a user_error. */
int dataset_read_file(struct dataset *d, const char *path, int part, int parts, int streamed,
		      int split);
/* The same in this process (the child's work): loads rows [part*N/parts,
 * (part+1)*N/parts) of path into d, or with streamed reads its layout only.
 * 0, or -1 with a user_error. */
int dataset_read_here(struct dataset *d, const char *path, int part, int parts, int streamed,
		      int split);
/* A file of tokens' layout, in the child (dataset_read_here, streamed):
 * split's dataset ("tokens", or "val_tokens" for DATASET_EVAL when the file
 * has them) stored whole, of uint8, uint16 or int32, and the attributes
 * vocab_size and tokenizer. 0, or -1 with a user_error. */
int dataset_tokens_layout(struct dataset *d, int64_t file, int part, int parts);
/* Dataset name of len bytes at offset at (-1: not stored whole) lies
 * within d's file. 0, or -1 with a user_error. */
int dataset_within(const struct dataset *d, const char *name, long long at, double len);
/* Maps d's file (d->map) when x is stored whole and the file is at most
 * DATASET_MAP_MAX bytes; where it is not mapped, dataset_read_at preads. */
void dataset_map_file(struct dataset *d);
/* len bytes at offset at of the mapped file into buf, or, with scale, as
 * many uint8 values scaled into the floats at buf (dataset_scale_u8); the
 * file cut short under the copy is a line in why. 0 or -1. */
int dataset_map_copy(const struct dataset *d, long long at, void *buf, size_t len, int scale,
		     const char *name, long row, long count, char *why);
/* len bytes at offset at of d's file into buf (mapped, or pread), for rows
 * [row, row + count) of name (the line in why names them). 0 or -1. */
int dataset_read_at(const struct dataset *d, long long at, void *buf, size_t len,
		    const char *name, long row, long count, char *why);
/* The file is as it was opened. 0, or -1 with why. */
int dataset_unchanged(const struct dataset *d, char *why);
/* Value j of row's x as the file indexes it: "x[row, j]", or
 * "x[row, h, w, c]" for images. */
void dataset_cell_text(const struct dataset *d, long row, int j, char *buf, size_t len);
/* id = a file's device, inode, size and modification time (ns). */
struct stat;
void dataset_identity(const struct stat *st, long long id[4]);
