/* Image files for the image-folder importer: PNG (libpng) and JPEG
 * (libjpeg-turbo) decoded to 8-bit gray or RGB pixels, a bilinear resize,
 * and `mtrain import --image-dir` itself (image_dir.c). */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* A decoded image: h rows of w pixels of c channels (1 gray, 3 RGB). */
struct image {
	int h, w, c;  /* e.g. 28, 28, 1 */
	uint8_t *px;  /* (h, w, c), grown by image_decode as needed */
	size_t cap;   /* bytes px holds */
};

/* Reads only path's header: im->h, w and c (1 for gray, gray with alpha;
 * 3 for RGB, RGBA, palette). 0, or -1 with a user_error naming path (not
 * a PNG or JPEG, broken, CMYK JPEG, cannot open). */
int image_probe(const char *path, struct image *im);
/* Decodes path whole into im: 16-bit samples scaled to 8 bits, alpha
 * dropped, palettes expanded to RGB, gamma left as stored. Any libpng
 * error, or libjpeg warning of corrupt data (a truncated file), is an
 * error. 0, or -1 with a user_error naming path. */
int image_decode(const char *path, struct image *im);
void image_free(struct image *im);
/* dst (H, W, c) = src (h, w, c) resized by bilinear interpolation with
 * pixel centres aligned (OpenCV's INTER_LINEAR, no antialiasing), rounded
 * to the nearest byte: the same size copies exactly, and an image whose
 * pixels were doubled halves back to the original. */
void image_resize(uint8_t *dst, int H, int W, const uint8_t *src, int h, int w, int c);

/* Imports dir (one subfolder per class, class ids in the byte order of the
 * folder names; in each, files ending .png, .jpg or .jpeg, any case, in
 * byte order of their names; other entries skipped and counted) into the
 * HDF5 data file path as dataset_write writes it: x uint8 [N, H, W, C],
 * y int32 [N] with attribute num_classes, plus dataset class_names [K]
 * (variable-length UTF-8 strings, row k naming class k). size (NULL: all
 * images must share the first's size) is {H, W} to resize every image to.
 * C is 3 when any image is colour (gray ones are replicated), else 1.
 * One class folder is imported with a warning: training refuses it.
 * Written under a temporary name, then renamed: on error nothing is left.
 * 0, or -1 with a user_error naming the file or folder. */
int dataset_import_image_dir(const char *dir, const char *path, const int *size);
