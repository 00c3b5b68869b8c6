/* The IDX importer of dataset.h (dataset_import_idx): Fashion-MNIST's and
 * MNIST's gzip'd image and label files into an HDF5 data file, with every
 * size checked against its header and the memory budget before it is read. */
#include "dataset.h"
#include "check.h"
#include "resources.h"
#include "log.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The bytes an IDX file whose first 16 bytes (or fewer: got) are head
 * declares it holds: images 0x803 [n, rows, cols], labels 0x801 [n]; got
 * itself when the magic is neither (the caller then says so); UINT64_MAX
 * when the sizes multiply past 2^64. */
static uint64_t idx_declared(const unsigned char *head, size_t got)
{
	if (got >= 16 && be32(head) == 0x803) {
		uint64_t n = be32(head + 4), r = be32(head + 8), c = be32(head + 12);
		return r && c && n > (UINT64_MAX - 16) / r / c ? UINT64_MAX : 16 + n * r * c;
	}
	if (got >= 8 && be32(head) == 0x801)
		return 8 + (uint64_t)be32(head + 4);
	return got;
}

/* Reads a (possibly gzip-compressed; zlib reads plain files too) IDX file,
 * but no more than one byte past what its header declares, after checking
 * that against the memory budget: a gzip bomb is refused before it is
 * inflated. NULL with a user_error, or the bytes (*len). */
static unsigned char *read_gz(const char *path, size_t *len)
{
	gzFile f = gzopen(path, "rb");
	if (!f) {
		user_error("%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	unsigned char head[16];
	int got = gzread(f, head, sizeof(head));
	uint64_t want = got < 0 ? 0 : idx_declared(head, (size_t)got);
	if (got >= 0 && want > (uint64_t)got &&
	    resources_check(path, want > 1e18 ? 1e18 : (double)want)) {
		gzclose(f);
		return NULL;
	}
	/* Grown as the data comes, to one byte past the declared size at most:
	 * a header that declares more than the file holds costs nothing. */
	size_t limit = got < 0 ? 0 : (size_t)want + 1, n = got < 0 ? 0 : (size_t)got;
	size_t cap = sizeof(head);
	unsigned char *buf = xmalloc(cap);
	memcpy(buf, head, n);
	while (got > 0 && n < limit) {
		if (n == cap) {
			cap = cap > limit / 2 ? limit : 2 * cap;
			unsigned char *grown = realloc(buf, cap);
			ALLOC_CHECK(grown);
			buf = grown;
		}
		got = gzread(f, buf + n, (unsigned)(cap - n > (1u << 30) ? (1u << 30) : cap - n));
		n += got > 0 ? (size_t)got : 0;
	}
	if (got < 0) {
		int e;
		user_error("%s: corrupt gzip data (%s)", path, gzerror(f, &e));
		gzclose(f);
		free(buf);
		return NULL;
	}
	gzclose(f);
	*len = n;
	return buf;
}


int dataset_import_idx(const char *images, const char *labels, const char *path)
{
	size_t il = 0, ll = 0;
	unsigned char *img = read_gz(images, &il), *lab = NULL;
	int rc = -1;
	if (!img)
		return -1;
	lab = read_gz(labels, &ll);
	if (!lab)
		goto out;
	/* IDX: magic 0x00000803 (ubyte, 3 dims) for images, 0x00000801 for labels. */
	if (il < 16 || be32(img) != 0x803) {
		user_error("%s: not an IDX image file (magic 0x00000803)", images);
		goto out;
	}
	if (ll < 8 || be32(lab) != 0x801) {
		user_error("%s: not an IDX label file (magic 0x00000801)", labels);
		goto out;
	}
	uint32_t n = be32(img + 4), rows = be32(img + 8), cols = be32(img + 12);
	if (n == 0 || rows == 0 || cols == 0) {
		user_error("%s: holds no images (%u of %ux%u)", images, n, rows, cols);
		goto out;
	}
	/* Sizes from the header are checked before they are multiplied: a
	 * forged one must not wrap around to match a short file. */
	if ((uint64_t)rows * cols > INT32_MAX || (uint64_t)n * rows * cols > (uint64_t)il) {
		user_error("%s: header says %u images of %ux%u, more than the file's %zu bytes "
			   "(truncated?)", images, n, rows, cols, il);
		goto out;
	}
	if (be32(lab + 4) != n) {
		user_error("%s: %u labels for %u images in %s", labels, be32(lab + 4), n, images);
		goto out;
	}
	if (il != 16 + (size_t)n * rows * cols || ll != 8 + (size_t)n) {
		user_error("%s: file size does not match its IDX header (truncated?)",
			   il != 16 + (size_t)n * rows * cols ? images : labels);
		goto out;
	}
	int32_t *y = xmalloc(sizeof(int32_t) * n);
	int classes = 0;
	for (uint32_t i = 0; i < n; i++) {
		y[i] = lab[8 + i];
		if (y[i] + 1 > classes)
			classes = y[i] + 1;
	}
	/* Images as Keras takes them: [N, rows, cols, 1], channels last. */
	const int image[3] = {(int)rows, (int)cols, 1};
	rc = dataset_write(path, img + 16, NULL, y, n, image, classes);
	free(y);
out:
	free(img);
	free(lab);
	return rc;
}
