/* A checkpoint's root attributes (ckpt_meta.h): one field table drives
 * writing, reading and inspect. */
#include "ckpt_meta.h"
#include "h5attr.h"
#include "log.h"

#include "hash.h"
#include "order.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The root attributes besides format and format_version, as struct ckpt_meta
 * holds them: long, int, uint64_t (stored as its int64 bits), char[size]
 * ("?" when absent) or malloc'd key = value lines (NULL when absent). On file
 * a number is an int64 scalar, a string a fixed-length C string. A file of
 * format version v must hold a field only if it is required and since <= v;
 * otherwise a missing field reads as its default, so a field added later is
 * one row (since: CKPT_FORMAT_VERSION, raised by one) and older files still
 * read, their digests (of the fields of their version) unchanged. */
#define DIGEST_KEY "meta_fnv1a64"

enum field_type { F_LONG, F_INT, F_U64, F_CHARS, F_TEXT };

struct field {
	const char *key;     /* attribute name, e.g. "global_step" */
	enum field_type type;
	size_t offset, size; /* of its member of struct ckpt_meta */
	int required, since; /* since: the format version that added it, e.g. 1 */
};

#define FIELD(key, type, member, required, since)                       \
	{key, type, offsetof(struct ckpt_meta, member),                 \
	 sizeof(((struct ckpt_meta *)0)->member), required, since}
/* In the order ckpt_write writes them and inspect prints them. */
static const struct field fields[] = {
	FIELD("global_step", F_LONG, global_step, 1, 1),
	FIELD("epoch", F_LONG, epoch, 1, 1),
	FIELD("step_in_epoch", F_LONG, step_in_epoch, 1, 1),
	FIELD("batch", F_INT, batch, 1, 1),
	FIELD("seed", F_U64, seed, 1, 1),
	FIELD("world_size", F_INT, world_size, 1, 1),
	FIELD("input_dim", F_INT, input_dim, 1, 1),
	FIELD("classes", F_INT, classes, 1, 1),
	FIELD("train_rows", F_LONG, train_rows, 1, 1),
	FIELD("order", F_CHARS, order, 1, 3), /* older files: the stored order */
	FIELD("config", F_TEXT, config, 0, 1),
	FIELD("created", F_CHARS, created, 0, 1),
	FIELD("mtrain_version", F_CHARS, version, 0, 1),
	FIELD("input_shape", F_CHARS, input_shape, 0, 4),
	FIELD(DIGEST_KEY, F_U64, digest, 1, 2), /* last: of every row above */
};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))


/* A number field of m as stored. */
static int64_t field_num(const struct field *f, const struct ckpt_meta *m)
{
	const char *p = (const char *)m + f->offset;
	if (f->type == F_U64)
		return (int64_t)*(const uint64_t *)p;
	return f->type == F_INT ? *(const int *)p : *(const long *)p;
}

/* A string field of m: the text, NULL for an absent F_TEXT. */
static const char *field_str(const struct field *f, const struct ckpt_meta *m)
{
	const char *p = (const char *)m + f->offset;
	return f->type == F_CHARS ? p : *(char *const *)p;
}

/* FNV-1a 64 of every field of format version (up to) version but the
 * digest: each key, then its value as stored (an int64, or a string with
 * its NUL; an absent one as ""). An edited or flipped root attribute no
 * longer matches, and a field a later version adds leaves the digests of
 * older files as they were. */
static uint64_t meta_digest(const struct ckpt_meta *m, int version)
{
	uint64_t h = FNV1A64_INIT;
	for (size_t i = 0; i + 1 < N_FIELDS; i++) {
		const struct field *f = &fields[i];
		if (f->since > version)
			continue;
		h = fnv1a64(h, f->key, strlen(f->key) + 1);
		if (f->type >= F_CHARS) {
			const char *s = field_str(f, m);
			h = fnv1a64(h, s ? s : "", strlen(s ? s : "") + 1);
		} else {
			int64_t v = field_num(f, m);
			h = fnv1a64(h, &v, sizeof(v));
		}
	}
	return h;
}

/* Reads f into a zeroed m: 0, or -1 when missing or unreadable (m then holds
 * the default). */
static int field_get(hid_t file, const struct field *f, struct ckpt_meta *m)
{
	char *p = (char *)m + f->offset;
	int64_t v;
	if (f->type == F_TEXT) {
		*(char **)p = h5attr_get_str(file, f->key);
		return *(char **)p ? 0 : -1;
	}
	if (f->type == F_CHARS) {
		char *s = h5attr_get_str(file, f->key);
		int rc = s ? 0 : -1;
		snprintf(p, f->size, "%s", s ? s : "?");
		free(s);
		return rc;
	}
	if (h5attr_get_i64(file, f->key, &v))
		return -1;
	if (f->type == F_LONG)
		*(long *)p = (long)v;
	else if (f->type == F_INT)
		*(int *)p = (int)v;
	else
		*(uint64_t *)p = (uint64_t)v;
	return 0;
}

/* Writes f of m: 0, or -1 when HDF5 failed. */
static int field_put(hid_t file, const struct field *f, const struct ckpt_meta *m)
{
	const char *s = f->type >= F_CHARS ? field_str(f, m) : NULL;
	if (f->type >= F_CHARS)
		return h5attr_put_str(file, f->key, s ? s : "");
	return h5attr_put_i64(file, f->key, field_num(f, m));
}

void ckpt_meta_free(struct ckpt_meta *m)
{
	for (size_t i = 0; i < N_FIELDS; i++) {
		char **text = (char **)((char *)m + fields[i].offset);
		if (fields[i].type == F_TEXT) {
			free(*text);
			*text = NULL;
		}
	}
}

void ckpt_meta_visit(struct ckpt_meta *m, ckpt_member_fn fn, void *ctx)
{
	fn(ctx, CKPT_MEMBER_NUMBER, &m->format_version, sizeof(m->format_version));
	for (size_t i = 0; i < N_FIELDS; i++) {
		const struct field *f = &fields[i];
		enum ckpt_member kind = f->type == F_TEXT    ? CKPT_MEMBER_TEXT
					: f->type == F_CHARS ? CKPT_MEMBER_CHARS
							     : CKPT_MEMBER_NUMBER;
		fn(ctx, kind, (char *)m + f->offset, f->size);
	}
}

int ckpt_meta_write(hid_t file, const struct ckpt_meta *meta)
{
	struct ckpt_meta m = *meta;
	m.digest = meta_digest(&m, CKPT_FORMAT_VERSION);
	int bad = h5attr_put_str(file, "format", CKPT_FORMAT) ||
		  h5attr_put_i64(file, "format_version", CKPT_FORMAT_VERSION);
	for (size_t i = 0; i < N_FIELDS; i++)
		bad = bad || field_put(file, &fields[i], &m);
	return bad ? -1 : 0;
}

/* Reads the root attributes into a zeroed m: 0, or -1 with a user_error
 * (no format_version, one this mtrain does not read, a needed field missing). */
int ckpt_meta_read(hid_t file, const char *path, struct ckpt_meta *m)
{
	int64_t version;
	if (h5attr_get_i64(file, "format_version", &version))
		return user_error("%s: root attribute '%s' missing or unreadable", path, "format_version");
	/* A missing field is named before a version this mtrain does not read,
	 * judged by the newest version it knows. */
	int64_t known = version < CKPT_FORMAT_VERSION ? version : CKPT_FORMAT_VERSION;
	for (size_t i = 0; i < N_FIELDS; i++)
		if (field_get(file, &fields[i], m) && fields[i].required && fields[i].since <= known)
			return user_error("%s: root attribute '%s' missing or unreadable", path,
					  fields[i].key);
	if (version < 1 || version > CKPT_FORMAT_VERSION)
		return user_error("%s: format version %lld; this mtrain reads version%s %s%d", path,
				  (long long)version, CKPT_FORMAT_VERSION > 1 ? "s" : "",
				  CKPT_FORMAT_VERSION > 1 ? "1 to " : "", CKPT_FORMAT_VERSION);
	m->format_version = (int)version;
	if (version >= 2 && meta_digest(m, (int)version) != m->digest)
		return user_error("%s: root attributes do not match their digest (%s): edited or "
				  "corrupt", path, DIGEST_KEY);
	if (version < 3) /* made before the order was recorded: with the stored one */
		snprintf(m->order, sizeof(m->order), "%s", ORDER_LEGACY_NAME);
	return 0;
}

/* The file, its format and one "key  value" line per field; a text by its
 * number of lines. */
void ckpt_meta_print(FILE *out, const char *path, const struct ckpt_meta *m)
{
	fprintf(out, "%-15s %s\n%-15s %s %d\n", "file", path, "format", CKPT_FORMAT, m->format_version);
	for (size_t i = 0; i < N_FIELDS; i++) {
		const struct field *f = &fields[i];
		const char *s = f->type >= F_CHARS ? field_str(f, m) : NULL;
		long lines = 0;
		for (const char *c = f->type == F_TEXT && s ? s : ""; *c; c++)
			lines += *c == '\n' || c[1] == '\0'; /* a last line without '\n' too */
		if (f->type == F_U64)
			fprintf(out, "%-15s %llu\n", f->key, (unsigned long long)field_num(f, m));
		else if (f->type < F_CHARS)
			fprintf(out, "%-15s %lld\n", f->key, (long long)field_num(f, m));
		else if (f->type == F_TEXT && s)
			fprintf(out, "%-15s %ld lines\n", f->key, lines);
		else
			fprintf(out, "%-15s %s\n", f->key, s ? s : "(absent)");
	}
}

void ckpt_meta_print_json(FILE *out, const char *path, const struct ckpt_meta *m)
{
	fputs("\"file\":", out);
	json_put(out, path);
	fprintf(out, ",\"format\":\"%s\",\"format_version\":%d,", CKPT_FORMAT, m->format_version);
	for (size_t i = 0; i < N_FIELDS; i++) {
		const struct field *f = &fields[i];
		fprintf(out, "\"%s\":", f->key);
		if (f->type == F_U64)
			fprintf(out, "%llu", (unsigned long long)field_num(f, m));
		else if (f->type < F_CHARS)
			fprintf(out, "%lld", (long long)field_num(f, m));
		else
			json_put(out, field_str(f, m));
		fputc(',', out);
	}
}
