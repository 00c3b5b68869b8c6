/* A checkpoint's root attributes: the format's name and version, then
 * the fields of struct ckpt_meta. Used by ckpt.c; not for other modules. */
#pragma once
#include <hdf5.h>
#include <stdio.h>

#include "ckpt.h"

/* Writes format, format_version and every field of m: 0, or -1 when HDF5
 * failed. */
int ckpt_meta_write(hid_t file, const struct ckpt_meta *m);
/* Reads the root attributes into a zeroed m: 0, or -1 with a user_error
 * (no format_version, one this mtrain does not read, a needed field
 * missing). */
int ckpt_meta_read(hid_t file, const char *path, struct ckpt_meta *m);
/* The file, its format and one "key  value" line per field. */
void ckpt_meta_print(FILE *out, const char *path, const struct ckpt_meta *m);
/* The same as JSON members ("file": ..., "format": ..., one per field;
 * strings escaped, an absent one null), each followed by a comma. */
void ckpt_meta_print_json(FILE *out, const char *path, const struct ckpt_meta *m);
