/* A checkpoint's root attributes: the format's name and version, then
 * the fields of struct ckpt_meta, by one table. Used by the checkpoint code
 * of io/; not for other modules. */
#pragma once
#include <hdf5.h>
#include <stdio.h>

#include "ckpt_format.h"

/* Writes format, format_version and every field of m: 0, or -1 when HDF5
 * failed. */
int ckpt_meta_write(hid_t file, const struct ckpt_meta *m);
/* Reads the root attributes into a zeroed m: 0, or -1 with a user_error
 * (no format_version, one this mtrain does not read, a needed field
 * missing). */
int ckpt_meta_read(hid_t file, const char *path, struct ckpt_meta *m);
/* One member of struct ckpt_meta, as ckpt_meta_visit hands it over. */
enum ckpt_member {
	CKPT_MEMBER_NUMBER, /* size bytes at member: an int, long or uint64_t */
	CKPT_MEMBER_CHARS,  /* a char[size] at member, NUL-terminated */
	CKPT_MEMBER_TEXT,   /* a malloc'd string or NULL: member is its char ** */
};
typedef void (*ckpt_member_fn)(void *ctx, enum ckpt_member kind, void *member, size_t size);
/* Calls fn on format_version, then on every field of the table in its
 * order: whatever walks m this way (the sandbox's pipe) carries a field
 * added to the table without a word. */
void ckpt_meta_visit(struct ckpt_meta *m, ckpt_member_fn fn, void *ctx);
/* The file, its format and one "key  value" line per field. */
void ckpt_meta_print(FILE *out, const char *path, const struct ckpt_meta *m);
/* The same as JSON members ("file": ..., "format": ..., one per field;
 * strings escaped, an absent one null), each followed by a comma. */
void ckpt_meta_print_json(FILE *out, const char *path, const struct ckpt_meta *m);
