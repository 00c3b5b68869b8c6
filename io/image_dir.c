/* `mtrain import --image-dir` (image.h): a folder of class folders of PNG
 * and JPEG files into an HDF5 data file, written by dataset_write as the
 * IDX importer's is, plus the class names. Two passes: the headers (sizes
 * and channels, so an odd file is named before any pixel is decoded and x
 * is allocated once), then the pixels. */
#include "image.h"
#include "check.h"
#include "dataset.h"
#include "log.h"
#include "paths.h"
#include "resources.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* The files to import, in order: class k's files before class k + 1's. */
struct image_list {
	char **classes;  /* (K) folder names, e.g. "ankle_boot" */
	int k;
	char **files;    /* (N) paths, "DIR/CLASS/NAME" */
	int32_t *label;  /* (N) class ids */
	long n, cap;
	long skipped;    /* entries neither a class folder nor an image file */
};

/* Byte order of the names, whatever the locale (alphasort uses strcoll). */
static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_image_name(const char *name)
{
	const char *dot = strrchr(name, '.');
	return dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") ||
		       !strcasecmp(dot, ".jpeg"));
}

static char *join(const char *dir, const char *name)
{
	size_t len = strlen(dir) + strlen(name) + 2;
	char *s = xmalloc(len);
	snprintf(s, len, "%s/%s", dir, name);
	return s;
}

/* Adds class folder dir's image files (class id k) to l. An entry with an
 * image's name that cannot be looked at (a dangling link) is listed: its
 * open then names the problem. 0, or -1 with a user_error. */
static int list_class(struct image_list *l, const char *dir, int k)
{
	struct dirent **e;
	int m = scandir(dir, &e, NULL, by_name);
	if (m < 0)
		return user_error("%s: cannot open class folder: %s", dir, strerror(errno));
	long before = l->n;
	for (int i = 0; i < m; i++) {
		char *path = join(dir, e[i]->d_name);
		struct stat st;
		int ok = e[i]->d_name[0] != '.' && is_image_name(e[i]->d_name) &&
			 (stat(path, &st) || !S_ISDIR(st.st_mode));
		if (ok) {
			if (l->n == l->cap) {
				l->cap = l->cap ? 2 * l->cap : 1024;
				l->files = realloc(l->files, sizeof(char *) * (size_t)l->cap);
				l->label = realloc(l->label, sizeof(int32_t) * (size_t)l->cap);
				ALLOC_CHECK(l->files && l->label);
			}
			l->files[l->n] = path;
			l->label[l->n++] = k;
		} else {
			l->skipped += strcmp(e[i]->d_name, ".") && strcmp(e[i]->d_name, "..");
			free(path);
		}
		free(e[i]);
	}
	free(e);
	if (l->n == before)
		return user_error("%s: empty class folder (no .png, .jpg or .jpeg file)", dir);
	return 0;
}

/* Lists dir's class folders (sorted) and their files into l. */
static int list_dir(struct image_list *l, const char *dir)
{
	struct dirent **e;
	int m = scandir(dir, &e, NULL, by_name);
	if (m < 0)
		return user_error("%s: cannot open image folder: %s", dir, strerror(errno));
	l->classes = xcalloc((size_t)m + 1, sizeof(char *));
	for (int i = 0; i < m; i++) {
		char *path = join(dir, e[i]->d_name);
		struct stat st;
		if (e[i]->d_name[0] != '.' && !stat(path, &st) && S_ISDIR(st.st_mode))
			l->classes[l->k++] = xstrdup(e[i]->d_name);
		else
			l->skipped += strcmp(e[i]->d_name, ".") && strcmp(e[i]->d_name, "..");
		free(path);
		free(e[i]);
	}
	free(e);
	if (l->k == 0)
		return user_error("%s: no class folders (expected one subfolder per class, "
				  "holding .png, .jpg or .jpeg files)", dir);
	if (l->k > DATASET_MAX_CLASSES)
		return user_error("%s: %d class folders, more than %d", dir, l->k,
				  DATASET_MAX_CLASSES);
	for (int k = 0; k < l->k; k++) {
		char *sub = join(dir, l->classes[k]);
		int rc = list_class(l, sub, k);
		free(sub);
		if (rc)
			return -1;
	}
	return 0;
}

static void list_free(struct image_list *l)
{
	for (int k = 0; k < l->k; k++)
		free(l->classes[k]);
	for (long i = 0; i < l->n; i++)
		free(l->files[i]);
	free(l->classes);
	free(l->files);
	free(l->label);
}

/* A progress line about every second: done of n, rows/s and the time left. */
struct progress {
	const char *what;  /* e.g. "decoding" */
	double start, last;
};

static void progress_tick(struct progress *p, long done, long n)
{
	double now = log_now();
	if (now - p->last < 1.0 || done == n)
		return;
	p->last = now;
	double rate = done / (now - p->start > 1e-9 ? now - p->start : 1e-9);
	log_info("import: %s %ld/%ld images, %.0f rows/s, ETA %.0f s", p->what, done, n, rate,
		 (double)(n - done) / (rate > 0 ? rate : 1));
}

/* The first pass: every header. Sets row {H, W, C}: size's, or the first
 * image's; C 3 when any image is colour. Without size, the first image of
 * another size is an error. */
static int probe_all(const struct image_list *l, const int *size, int row[3])
{
	struct image im = {0};
	struct progress p = {"reading headers", log_now(), log_now()};
	row[2] = 1;
	for (long i = 0; i < l->n; i++) {
		if (image_probe(l->files[i], &im))
			return -1;
		if (i == 0) {
			row[0] = size ? size[0] : im.h;
			row[1] = size ? size[1] : im.w;
		} else if (!size && (im.h != row[0] || im.w != row[1]))
			return user_error("%s: %dx%d pixels, but %s is %dx%d (images of different "
					  "sizes need --size H,W)", l->files[i], im.h, im.w,
					  l->files[0], row[0], row[1]);
		if (im.c == 3)
			row[2] = 3;
		progress_tick(&p, i + 1, l->n);
	}
	return 0;
}

/* The second pass: x (n, H, W, C) = every image, resized to H x W where
 * its size differs, gray replicated to RGB when C is 3. */
static int decode_all(const struct image_list *l, const int row[3], uint8_t *x)
{
	struct image im = {0};
	size_t hw = (size_t)row[0] * (size_t)row[1], slot = hw * (size_t)row[2];
	uint8_t *scaled = xmalloc(slot); /* (H, W, c) */
	struct progress p = {"decoding", log_now(), log_now()};
	int rc = 0;
	for (long i = 0; i < l->n && !rc; i++) {
		rc = image_decode(l->files[i], &im);
		if (rc)
			break;
		const uint8_t *src = im.px;
		if (im.h != row[0] || im.w != row[1]) {
			image_resize(scaled, row[0], row[1], im.px, im.h, im.w, im.c);
			src = scaled;
		}
		uint8_t *dst = x + (size_t)i * slot;
		if (im.c == row[2])
			memcpy(dst, src, slot);
		else /* a gray image among colour ones */
			for (size_t j = 0; j < hw; j++)
				dst[3 * j] = dst[3 * j + 1] = dst[3 * j + 2] = src[j];
		progress_tick(&p, i + 1, l->n);
	}
	free(scaled);
	image_free(&im);
	return rc;
}

int dataset_import_image_dir(const char *dir, const char *path, const int *size)
{
	struct image_list l = {0};
	int row[3];
	uint8_t *x = NULL;
	int rc = -1;
	double start = log_now();
	if (path_check_writable("--out", path, 0, NULL) || list_dir(&l, dir))
		goto out;
	if (l.skipped)
		log_info("import: skipped %ld entries of %s that are neither class folders nor "
			 ".png/.jpg/.jpeg files", l.skipped, dir);
	if (probe_all(&l, size, row))
		goto out;
	double bytes = (double)l.n * row[0] * row[1] * row[2];
	if (resources_check(path, bytes + (double)l.n * sizeof(int32_t)))
		goto out;
	x = xmalloc((size_t)bytes);
	if (decode_all(&l, row, x))
		goto out;
	if (dataset_write_named(path, x, NULL, l.label, l.n, row, l.k, l.classes))
		goto out;
	/* Said now, not first when training refuses the file (src/agree.c:
	 * "labels hold 1 class; need at least 2"). */
	if (l.k == 1)
		log_warn("%s has one class folder ('%s'): a classifier needs two or more; "
			 "training on %s will be refused", dir, l.classes[0], path);
	double secs = log_now() - start;
	log_info("import: %ld images [%d,%d,%d] in %d classes from %s, %.1f s (%.0f rows/s)",
		 l.n, row[0], row[1], row[2], l.k, dir, secs, l.n / (secs > 1e-9 ? secs : 1e-9));
	rc = 0;
out:
	free(x);
	list_free(&l);
	return rc;
}
