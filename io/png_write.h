/* PNG files written with zlib: 8-bit grayscale or RGB, for pictures of
 * data (mtrain preview). */
#pragma once
#include <stdint.h>

/* Writes pix (h, w, channels) bytes, channels 1 (grayscale) or 3 (RGB), to
 * path as a PNG, under a temporary name renamed into place: a failed write
 * leaves an older file at path whole. 0, or -1 with a user_error naming
 * path. */
int png_write(const char *path, const uint8_t *pix, int w, int h, int channels);
