/* PNG and JPEG decoding and the bilinear resize of image.h. Both libraries
 * report errors by longjmp: the state they touch lives behind a pointer
 * (struct decoder), never in a local a longjmp could leave stale. */
#include "image.h"
#include "check.h"
#include "log.h"
#include "resources.h"

#include <errno.h>
#include <jpeglib.h>
#include <libpng16/png.h> /* not <png.h>: io/png.h (the PNG writer) shadows it */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Larger sides are refused before anything is allocated (JPEG's own limit
 * is 65500; libpng's default is 1000000). */
#define IMAGE_MAX_SIDE 65500

struct decoder {
	const char *path;
	FILE *f;
	struct image *im;
	int header_only;
	jmp_buf jb;
	char msg[JMSG_LENGTH_MAX > 200 ? JMSG_LENGTH_MAX : 200];
	png_bytep *rows;               /* libpng's row pointers, (h) */
	struct jpeg_error_mgr jerr;    /* first: libjpeg's err points here */
	struct jpeg_decompress_struct jpg;
};

/* Room for the decoded pixels, checked against the memory budget. */
static int image_reserve(struct decoder *d, int h, int w, int c)
{
	if (h < 1 || w < 1 || h > IMAGE_MAX_SIDE || w > IMAGE_MAX_SIDE)
		return user_error("%s: image of %dx%d pixels (at most %d a side)", d->path, h,
				  w, IMAGE_MAX_SIDE);
	d->im->h = h;
	d->im->w = w;
	d->im->c = c;
	size_t bytes = (size_t)h * (size_t)w * (size_t)c;
	if (d->header_only || bytes <= d->im->cap)
		return 0;
	if (resources_check(d->path, (double)bytes))
		return -1;
	free(d->im->px);
	d->im->px = xmalloc(bytes);
	d->im->cap = bytes;
	return 0;
}

static void png_fail(png_structp p, png_const_charp msg)
{
	struct decoder *d = png_get_error_ptr(p);
	snprintf(d->msg, sizeof(d->msg), "%s", msg);
	longjmp(d->jb, 1);
}

/* Warnings (an odd sRGB profile, an unknown chunk) leave the pixels intact. */
static void png_ignore(png_structp p, png_const_charp msg) {}

static int png_load(struct decoder *d)
{
	png_structp p = png_create_read_struct(PNG_LIBPNG_VER_STRING, d, png_fail, png_ignore);
	ALLOC_CHECK(p);
	png_infop info = png_create_info_struct(p);
	ALLOC_CHECK(info);
	int rc = 0;
	if (setjmp(d->jb)) {
		rc = user_error("%s: broken PNG image (%s)", d->path, d->msg);
		goto out;
	}
	png_init_io(p, d->f);
	png_set_sig_bytes(p, 8);
	png_read_info(p, info);
	png_uint_32 w, h;
	int depth, type;
	png_get_IHDR(p, info, &w, &h, &depth, &type, NULL, NULL, NULL);
	int c = type & PNG_COLOR_MASK_COLOR ? 3 : 1;
	/* libpng refuses sides past 1000000 (PNG_USER_WIDTH_MAX): they fit an int. */
	if (image_reserve(d, (int)h, (int)w, c)) {
		rc = -1;
		goto out;
	}
	if (d->header_only)
		goto out;
	if (type == PNG_COLOR_TYPE_PALETTE)
		png_set_palette_to_rgb(p);
	if (!(type & PNG_COLOR_MASK_COLOR) && depth < 8)
		png_set_expand_gray_1_2_4_to_8(p);
	if (depth == 16)
		png_set_scale_16(p);
	png_set_strip_alpha(p);
	png_set_interlace_handling(p);
	png_read_update_info(p, info);
	if (png_get_rowbytes(p, info) != (size_t)w * (size_t)c) {
		rc = user_error("%s: PNG rows of %zu bytes, not %u pixels of %d channels", d->path,
				(size_t)png_get_rowbytes(p, info), (unsigned)w, c);
		goto out;
	}
	d->rows = xmalloc(sizeof(png_bytep) * h);
	for (png_uint_32 r = 0; r < h; r++)
		d->rows[r] = d->im->px + (size_t)r * w * (size_t)c;
	png_read_image(p, d->rows);
	png_read_end(p, NULL); /* the checksums after the pixels */
out:
	free(d->rows);
	d->rows = NULL;
	png_destroy_read_struct(&p, &info, NULL);
	return rc;
}

static void jpg_fail(j_common_ptr ci)
{
	struct decoder *d = (struct decoder *)((char *)ci->err - offsetof(struct decoder, jerr));
	ci->err->format_message(ci, d->msg);
	longjmp(d->jb, 1);
}

/* Level -1 is a warning of corrupt data, after which libjpeg would go on
 * with made-up pixels (a truncated file reads as gray): an error here. */
static void jpg_message(j_common_ptr ci, int level)
{
	if (level < 0)
		jpg_fail(ci);
}

static int jpg_load(struct decoder *d)
{
	struct jpeg_decompress_struct *ci = &d->jpg;
	ci->err = jpeg_std_error(&d->jerr);
	d->jerr.error_exit = jpg_fail;
	d->jerr.emit_message = jpg_message;
	jpeg_create_decompress(ci);
	int rc = 0;
	if (setjmp(d->jb)) {
		rc = user_error("%s: broken JPEG image (%s)", d->path, d->msg);
		goto out;
	}
	jpeg_stdio_src(ci, d->f);
	jpeg_read_header(ci, TRUE);
	int c = ci->num_components;
	if (c != 1 && c != 3) {
		rc = user_error("%s: a JPEG of %d components (CMYK?): only gray and RGB are "
				"supported", d->path, c);
		goto out;
	}
	if (image_reserve(d, (int)ci->image_height, (int)ci->image_width, c)) {
		rc = -1;
		goto out;
	}
	if (d->header_only)
		goto out;
	ci->out_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_start_decompress(ci);
	if (ci->output_components != c || (int)ci->output_width != d->im->w ||
	    (int)ci->output_height != d->im->h) {
		rc = user_error("%s: JPEG decodes to an unexpected layout", d->path);
		goto out;
	}
	while (ci->output_scanline < ci->output_height) {
		JSAMPROW row = d->im->px + (size_t)ci->output_scanline * (size_t)d->im->w * (size_t)c;
		jpeg_read_scanlines(ci, &row, 1);
	}
	jpeg_finish_decompress(ci);
out:
	jpeg_destroy_decompress(ci);
	return rc;
}

static int image_load(const char *path, struct image *im, int header_only)
{
	struct decoder *d = xcalloc(1, sizeof(*d));
	d->path = path;
	d->im = im;
	d->header_only = header_only;
	int rc;
	unsigned char sig[8];
	d->f = fopen(path, "rb");
	if (!d->f)
		rc = user_error("%s: cannot open: %s", path, strerror(errno));
	else if (fread(sig, 1, sizeof(sig), d->f) != sizeof(sig))
		rc = ferror(d->f) ? user_error("%s: cannot read: %s", path, strerror(errno))
				  : user_error("%s: not a PNG or JPEG image (%s)", path,
					       "shorter than 8 bytes");
	else if (!png_sig_cmp(sig, 0, sizeof(sig)))
		rc = png_load(d);
	else if (sig[0] == 0xff && sig[1] == 0xd8 && sig[2] == 0xff) {
		rewind(d->f);
		rc = jpg_load(d);
	} else
		rc = user_error("%s: not a PNG or JPEG image", path);
	if (d->f)
		fclose(d->f);
	free(d);
	return rc;
}

int image_probe(const char *path, struct image *im)
{
	return image_load(path, im, 1);
}

int image_decode(const char *path, struct image *im)
{
	return image_load(path, im, 0);
}

void image_free(struct image *im)
{
	free(im->px);
	im->px = NULL;
	im->cap = 0;
}

/* Where output pixel o of n falls on an input of m: the two neighbours
 * and the second's weight, centres aligned ((o + 0.5) * m / n - 0.5),
 * clamped at the edges. */
static void bilinear_tap(int o, int n, int m, int *i0, int *i1, double *f)
{
	double s = ((double)o + 0.5) * (double)m / (double)n - 0.5;
	if (s < 0)
		s = 0;
	int i = (int)s;
	if (i > m - 1)
		i = m - 1;
	*i0 = i;
	*i1 = i + 1 < m ? i + 1 : i;
	*f = s - i;
}

void image_resize(uint8_t *dst, int H, int W, const uint8_t *src, int h, int w, int c)
{
	for (int y = 0; y < H; y++) {
		int y0, y1;
		double fy;
		bilinear_tap(y, H, h, &y0, &y1, &fy);
		for (int x = 0; x < W; x++) {
			int x0, x1;
			double fx;
			bilinear_tap(x, W, w, &x0, &x1, &fx);
			for (int k = 0; k < c; k++) {
				double a = src[((size_t)y0 * w + x0) * c + k];
				double b = src[((size_t)y0 * w + x1) * c + k];
				double e = src[((size_t)y1 * w + x0) * c + k];
				double g = src[((size_t)y1 * w + x1) * c + k];
				double v = (1 - fy) * ((1 - fx) * a + fx * b) +
					   fy * ((1 - fx) * e + fx * g);
				dst[((size_t)y * W + x) * c + k] = (uint8_t)(v + 0.5);
			}
		}
	}
}
