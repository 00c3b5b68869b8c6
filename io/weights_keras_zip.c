/* The .keras zip (config.json, metadata.json, model.weights.h5), read
 * and written in memory with libzip. */
#include "weights_file.h"
#include "weights_io.h"
#include "check.h"
#include "log.h"
#include "mtrain.h"
#include "resources.h"

#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>
#include <zlib.h>

/* zlib's CRC-32 of bytes[0..len), in pieces its uInt can count. */
static uint32_t crc_of(const void *bytes, size_t len)
{
	uLong crc = crc32(0, NULL, 0);
	for (size_t at = 0; at < len;) {
		uInt piece = len - at > (1u << 30) ? 1u << 30 : (uInt)(len - at);
		crc = crc32(crc, (const Bytef *)bytes + at, piece);
		at += piece;
	}
	return (uint32_t)crc;
}

/* The weights member of the zip z (path; st, its stat) read whole into a
 * new buffer: its declared size is checked against the memory budget
 * first, so a zip bomb is refused before a byte is inflated, and the bytes
 * are held once. NULL with a user_error naming path and the member. */
static void *read_member(const char *path, zip_t *z, const zip_stat_t *st)
{
	char what[FILE_PATH_LEN + 32];
	snprintf(what, sizeof(what), "%s: its %s", path, KERAS_WEIGHTS_MEMBER);
	if (resources_check(what, (double)st->size))
		return NULL;
	zip_file_t *member = zip_fopen(z, KERAS_WEIGHTS_MEMBER, 0);
	if (!member) {
		user_error("%s: cannot open its %s (%s)", path, KERAS_WEIGHTS_MEMBER, zip_strerror(z));
		return NULL;
	}
	/* Within the budget, but not within this process's address space
	 * (ulimit -v): a line, where xmalloc would end the reader. */
	char *image = malloc(st->size + 1), need[32];
	/* In pieces of at most 1 GiB: asked for 4 GiB at once, libzip (1.7)
	 * counted one byte more than a short member holds. */
	zip_uint64_t at = 0;
	zip_int64_t got = image ? 1 : -1;
	while (got > 0 && at < st->size) {
		zip_uint64_t piece = st->size - at > (1u << 30) ? 1u << 30 : st->size - at;
		got = zip_fread(member, image + at, piece);
		at += got > 0 ? (zip_uint64_t)got : 0;
	}
	int bad = 1;
	if (!image)
		user_error("%s needs %s of memory to read; this process cannot have that much "
			   "(ulimit -v?)", what, bytes_text((double)st->size, need, sizeof(need)));
	else if (got < 0)
		user_error("%s: cannot read its %s (%s)", path, KERAS_WEIGHTS_MEMBER,
			   zip_file_strerror(member));
	else if (at != st->size)
		user_error("%s ends after %llu of the %llu bytes the zip says it holds (damaged or "
			   "forged)", what, (unsigned long long)at, (unsigned long long)st->size);
	/* The member's CRC-32, as Keras' zipfile checks it. */
	else if ((st->valid & ZIP_STAT_CRC) && crc_of(image, st->size) != st->crc)
		user_error("%s: its %s fails its CRC-32 (damaged)", path, KERAS_WEIGHTS_MEMBER);
	else
		bad = 0;
	zip_fclose(member);
	if (bad) {
		free(image);
		image = NULL;
	}
	return image;
}

int weights_read_keras_zip(const char *path, struct tensors *t)
{
	int zerr = 0;
	zip_t *z = zip_open(path, ZIP_RDONLY, &zerr);
	if (!z) {
		zip_error_t e;
		zip_error_init_with_code(&e, zerr);
		int rc = user_error("%s: not a readable zip (%s)", path, zip_error_strerror(&e));
		zip_error_fini(&e);
		return rc;
	}
	zip_stat_t st;
	int rc = 0;
	void *image = NULL;
	if (zip_stat(z, KERAS_WEIGHTS_MEMBER, 0, &st) || !(st.valid & ZIP_STAT_SIZE))
		rc = user_error("%s: a zip without %s: not a .keras model", path, KERAS_WEIGHTS_MEMBER);
	else if (st.size > ((zip_uint64_t)1 << 40))
		rc = user_error("%s: %s says it is %llu bytes", path, KERAS_WEIGHTS_MEMBER,
				(unsigned long long)st.size);
	else if (!(image = read_member(path, z, &st)))
		rc = -1;
	zip_discard(z);
	hid_t f = rc ? -1 : weights_open_h5(KERAS_WEIGHTS_MEMBER, image, st.size);
	int is_keras = 0;
	if (!rc && f < 0)
		rc = user_error("%s: its %s is not an HDF5 file", path, KERAS_WEIGHTS_MEMBER);
	else if (!rc && !(rc = weights_read_keras_h5(path, f, t, &is_keras)) && !is_keras)
		rc = user_error("%s: its %s has no 'layers' group: not Keras' weights", path,
				KERAS_WEIGHTS_MEMBER);
	if (f >= 0)
		H5Fclose(f);
	free(image);
	return rc;
}

/* Adds a stored member name holding bytes[0..len) (not copied: they must
 * live until zip_close). */
static int zip_put(zip_t *z, const char *name, const void *bytes, size_t len)
{
	zip_source_t *s = zip_source_buffer(z, bytes, len, 0);
	zip_int64_t i = s ? zip_file_add(z, name, s, ZIP_FL_ENC_UTF_8) : -1;
	if (i < 0) {
		zip_source_free(s);
		return -1;
	}
	return zip_set_file_compression(z, (zip_uint64_t)i, ZIP_CM_STORE, 0);
}

void *keras_zip_image(const char *metadata, const char *config, const void *h5, size_t h5_len,
		      size_t *len)
{
	zip_error_t err;
	zip_error_init(&err);
	zip_source_t *buf = zip_source_buffer_create(NULL, 0, 0, &err);
	zip_t *z = NULL;
	if (buf) {
		zip_source_keep(buf); /* it outlives the archive: the bytes are read from it */
		z = zip_open_from_source(buf, ZIP_TRUNCATE, &err);
	}
	int bad = !z || zip_put(z, "metadata.json", metadata, strlen(metadata)) ||
		  zip_put(z, "config.json", config, strlen(config)) ||
		  zip_put(z, KERAS_WEIGHTS_MEMBER, h5, h5_len);
	if (z && (bad || zip_close(z))) {
		zip_discard(z);
		bad = 1;
	}
	zip_stat_t st;
	void *image = NULL;
	if (!bad && zip_source_stat(buf, &st) == 0 && (st.valid & ZIP_STAT_SIZE) &&
	    zip_source_open(buf) == 0) {
		image = xmalloc(st.size + 1);
		if (zip_source_read(buf, image, st.size) != (zip_int64_t)st.size) {
			free(image);
			image = NULL;
		}
		zip_source_close(buf);
	}
	if (buf)
		zip_source_free(buf);
	zip_error_fini(&err);
	*len = image ? st.size : 0;
	return image;
}
