/* The data reader alone: the rows/s at which one rank's loader (the reader
 * thread of src/loader.c: rows read from the file in the epoch's order,
 * checked, augmented) stages batches when nothing else runs, warm or with
 * the file's page cache dropped first (posix_fadvise DONTNEED, as
 * bench/bench.sh does before a cold run).
 *
 * usage: bench_reader FILE [--batch B] [--ranks N] [--batches K]
 *                          [--augment LIST] [--input-shape H,W,C] [--cold]
 *                          [--pread]
 *        bench_reader --drop FILE      only drops FILE's page cache
 * (--pread: read with pread, as a file larger than DATASET_MAP_MAX is)
 * prints: reader rows 12800 seconds 0.081 rows/s 158000 cold 0 augment crop:4,flip
 *         open_seconds 0.012 read mapped|pread|hdf5
 * (rank 0's share of a global batch B over N ranks, K batches; exit 1 on a
 * read error, 2 on bad arguments). */
#include "augment.h"
#include "backend.h"
#include "dataset.h"
#include "loader.h"
#include "log.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int drop(const char *path)
{
	int fd = open(path, O_RDONLY);
	int rc = fd < 0 || fdatasync(fd) || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (rc)
		perror(path);
	if (fd >= 0)
		close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--drop"))
		return drop(argv[2]);
	const char *file = NULL, *list = "", *shape_text = NULL;
	long batch = 128, batches = 200;
	int ranks = 1, cold = 0, by_pread = 0;
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(argv[i], "--batch") && v)
			batch = atol(argv[++i]);
		else if (!strcmp(argv[i], "--ranks") && v)
			ranks = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--batches") && v)
			batches = atol(argv[++i]);
		else if (!strcmp(argv[i], "--augment") && v)
			list = argv[++i];
		else if (!strcmp(argv[i], "--input-shape") && v)
			shape_text = argv[++i];
		else if (!strcmp(argv[i], "--cold"))
			cold = 1;
		else if (!strcmp(argv[i], "--pread"))
			by_pread = 1;
		else if (argv[i][0] != '-' && !file)
			file = argv[i];
		else {
			fprintf(stderr, "usage: bench_reader FILE [--batch B] [--ranks N] [--batches K] "
					"[--augment LIST] [--input-shape H,W,C] [--cold] [--pread] | "
					"--drop FILE\n");
			return 2;
		}
	}
	if (!file || batch < ranks || ranks < 1 || batches < 1)
		return fprintf(stderr, "bench_reader: a FILE, and --batch at least --ranks\n"), 2;
	if (cold && drop(file))
		return 1;
	struct dataset d;
	double t_open = log_now();
	if (dataset_open(&d, file, 0, 1)) {
		fprintf(stderr, "bench_reader: %s\n", user_error_text());
		return 1;
	}
	t_open = log_now() - t_open;
	if (by_pread)
		dataset_unmap(&d);
	const char *how = d.x_at < 0 ? "hdf5" : d.map ? "mapped" : "pread";
	int shape[3] = {d.shape[0], d.shape[1], d.shape[2]};
	if (shape_text && sscanf(shape_text, "%d,%d,%d", &shape[0], &shape[1], &shape[2]) != 3)
		return fprintf(stderr, "bench_reader: --input-shape H,W,C\n"), 2;
	struct augment aug;
	if (augment_init(&aug, list, shape)) {
		fprintf(stderr, "bench_reader: %s\n", user_error_text());
		return 2;
	}
	const struct backend *be = backend_cpu();
	struct loader l;
	loader_init(&l, be, &d, 42, batch, 0, ranks, 4);
	l.aug = aug.n ? &aug : NULL;
	long per_epoch = l.per_epoch, rows = 0;
	int bad = 0;
	double t0 = log_now();
	for (long g = 0; g < batches && !bad; g++) {
		struct staged *s = loader_current(&l, g / per_epoch, g % per_epoch);
		bad = s->bad;
		if (bad)
			fprintf(stderr, "bench_reader: %s\n", s->why);
		rows += s->rows;
	}
	double secs = log_now() - t0;
	loader_free(&l);
	augment_free(&aug);
	dataset_free(&d);
	if (bad)
		return 1;
	printf("reader rows %ld seconds %.3f rows/s %.0f cold %d augment %s open_seconds %.3f "
	       "read %s\n", rows, secs, (double)rows / secs, cold, list[0] ? list : "none", t_open,
	       how);
	return 0;
}
