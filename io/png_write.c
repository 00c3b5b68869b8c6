/* The PNG writer of png.h: the signature, then IHDR, one IDAT of the
 * deflated scanlines (each led by filter byte 0) and IEND, each chunk as
 * length, type, data and the CRC-32 of type and data. */
#include "png_write.h"
#include "check.h"
#include "log.h"
#include "mtrain.h"
#include "paths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* One chunk of type (4 letters) and len bytes of data to f; 0 or -1. */
static int put_chunk(FILE *f, const char *type, const uint8_t *data, size_t len)
{
	uint8_t head[8], tail[4];
	put32(head, (uint32_t)len);
	memcpy(head + 4, type, 4);
	uLong crc = crc32(0L, (const Bytef *)type, 4);
	if (len)
		crc = crc32(crc, data, (uInt)len);
	put32(tail, (uint32_t)crc);
	return fwrite(head, 1, 8, f) == 8 && (!len || fwrite(data, 1, len, f) == len) &&
			       fwrite(tail, 1, 4, f) == 4 ? 0 : -1;
}

int png_write(const char *path, const uint8_t *pix, int w, int h, int channels)
{
	size_t stride = (size_t)w * channels, raw_len = (stride + 1) * (size_t)h;
	uint8_t *raw = xmalloc(raw_len);
	for (int y = 0; y < h; y++) {
		raw[y * (stride + 1)] = 0; /* filter: none */
		memcpy(raw + y * (stride + 1) + 1, pix + y * stride, stride);
	}
	uLongf z_len = compressBound((uLong)raw_len);
	uint8_t *z = xmalloc(z_len);
	int zrc = compress2(z, &z_len, raw, (uLong)raw_len, 6);
	if (zrc != Z_OK)
		check_fail("zlib", "compress2", zError(zrc), __FILE__, __LINE__);
	uint8_t ihdr[13];
	put32(ihdr, (uint32_t)w);
	put32(ihdr + 4, (uint32_t)h);
	ihdr[8] = 8;                        /* bits per sample */
	ihdr[9] = channels == 3 ? 2 : 0;    /* colour type: RGB or grayscale */
	ihdr[10] = ihdr[11] = ihdr[12] = 0; /* deflate, adaptive filters, no interlace */
	static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	/* Under a temporary name, then renamed: a full disk leaves an older
	 * picture of that name whole, and no part of the new one. */
	char tmp[FILE_PATH_LEN];
	FILE *f = path_create_temp(path, tmp, sizeof(tmp));
	int rc = -1;
	if (!f) {
		user_error("%s: cannot create: %s", path, strerror(errno));
	} else {
		/* A failed fwrite sets f's error flag, which the commit checks. */
		if (fwrite(sig, 1, 8, f) == 8 && !put_chunk(f, "IHDR", ihdr, 13) &&
		    !put_chunk(f, "IDAT", z, z_len))
			put_chunk(f, "IEND", NULL, 0);
		if (path_commit_temp(f, tmp, path))
			user_error("%s: write error: %s", path, strerror(errno));
		else
			rc = 0;
	}
	free(raw);
	free(z);
	return rc;
}
