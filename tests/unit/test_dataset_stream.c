/* Data files streamed (dataset_open): rows read from the file, mapped and
 * with pread, the same values as a load; a file cut short under either is
 * one line, not a crash. Loading whole is test_dataset.c. */
#include "dataset.h"
#include "dataset_io.h"
#include "log.h"
#include "unit.h"
#include "fixtures.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Rows idx (count) and the range [begin, begin + count) of the streamed s
 * are the loaded l's, bitwise. */
static int same_rows(const struct dataset *s, const struct dataset *l, const uint32_t *idx,
		     int count, long begin)
{
	size_t cells = (size_t)count * (size_t)l->dim;
	float *xs = malloc(cells * sizeof(float)), *xl = malloc(cells * sizeof(float));
	int32_t *ys = malloc((size_t)count * sizeof(int32_t)), *yl = malloc((size_t)count * sizeof(int32_t));
	char why[DATASET_WHY_LEN] = "";
	int same = dataset_read_rows(s, idx, count, xs, ys, why) == 0;
	dataset_gather(l, idx, count, xl, yl);
	same = same && !memcmp(xs, xl, cells * sizeof(float)) && !memcmp(ys, yl, (size_t)count * 4);
	same = same && dataset_read_range(s, begin, count, xs, ys, why) == 0;
	dataset_rows(l, begin, count, xl, yl);
	same = same && !memcmp(xs, xl, cells * sizeof(float)) && !memcmp(ys, yl, (size_t)count * 4);
	if (!same)
		fprintf(stderr, "rows differ or fail: %s\n", why);
	free(xs), free(xl), free(ys), free(yl);
	return same;
}

/* The file cut to cut bytes under d, whose identity is brought up to date
 * (as if the run had not yet seen it change): row (at or past the cut) is
 * one line naming the cut and the row it falls in (in_row; -1: before x),
 * twice (a second SIGBUS is caught as the first); row 0 still reads unless
 * the cut is before x. */
static void check_cut(struct dataset *d, long cut, uint32_t row, long in_row)
{
	EXPECT(truncate(d->path, cut) == 0);
	struct stat st;
	EXPECT(fstat(d->fd, &st) == 0);
	dataset_identity(&st, d->identity);
	float x[4096];
	int32_t y;
	for (int i = 0; i < 2; i++) {
		char why[DATASET_WHY_LEN] = "";
		EXPECT(dataset_read_rows(d, &row, 1, x, &y, why) == -1);
		char want[96];
		if (in_row < 0)
			snprintf(want, sizeof(want), "the file ends at byte %ld, before 'x' begins", cut);
		else
			snprintf(want, sizeof(want), "the file ends at byte %ld, within row %ld of 'x'",
				 cut, in_row);
		EXPECT(strstr(why, want) != NULL);
		if (!strstr(why, want))
			fprintf(stderr, "got: %s\nwant: %s\n", why, want);
	}
	const uint32_t first = 0;
	char why[DATASET_WHY_LEN];
	EXPECT(dataset_read_rows(d, &first, 1, x, &y, why) == (in_row < 0 ? -1 : 0));
}

/* A SIGBUS that is not a mapped read's still ends the process (SIGBUS's
 * default; under AddressSanitizer its report and exit status): sent, and
 * from touching the cut mapping outside a read. */
static void check_other_sigbus(const struct dataset *d, long past)
{
	for (int how = 0; how < 2; how++) {
		pid_t pid = fork();
		if (pid == 0) {
			int null = open("/dev/null", O_WRONLY);
			dup2(null, STDERR_FILENO); /* a sanitizer's report, expected */
			if (how == 0)
				raise(SIGBUS);
			else
				printf("%d\n", *(volatile const uint8_t *)(d->map + past));
			_exit(0);
		}
		int status = 0;
		EXPECT(waitpid(pid, &status, 0) == pid);
		EXPECT(WIFSIGNALED(status) ? WTERMSIG(status) == SIGBUS : WEXITSTATUS(status) != 0);
	}
}

/* Streamed (dataset_open), a uint8 file of rows that span pages and a
 * float file: rows in a random order and a range, whole and sharded, equal
 * a load's, mapped and, after dataset_unmap, read with pread; then the file
 * cut short under either: one line, no crash. */
static void check_streamed(const char *dir)
{
	enum { SN = 3000, SH = 28, SW = 28, SD = SH * SW, FN = 2100, FD = 37 };
	uint8_t *x8 = malloc((size_t)SN * SD);
	float *xf = malloc(sizeof(float) * FN * FD);
	int32_t *y = malloc(sizeof(int32_t) * SN);
	for (long i = 0; i < (long)SN * SD; i++)
		x8[i] = (uint8_t)(i * 2654435761u >> 13);
	for (int i = 0; i < FN * FD; i++)
		xf[i] = (float)i * 0.37f - 1000.0f;
	for (int i = 0; i < SN; i++)
		y[i] = (int32_t)(i * 7 % 10);
	char u8[1100], f32[1100];
	snprintf(u8, sizeof(u8), "%s/stream-u8.h5", dir);
	snprintf(f32, sizeof(f32), "%s/stream-f32.h5", dir);
	const int image[3] = {SH, SW, 1}, flat[3] = {1, 1, FD};
	EXPECT(dataset_write(u8, x8, NULL, y, SN, image, 10) == 0);
	EXPECT(dataset_write(f32, NULL, xf, y, FN, flat, 10) == 0);
	uint32_t idx[500];
	for (int i = 0; i < 500; i++)
		idx[i] = (uint32_t)((i * 7919L + 13) % 600);
	const char *paths[2] = {u8, f32};
	for (int f = 0; f < 2; f++)
		for (int part = 0; part < 3; part += 2) {
			struct dataset s, l;
			EXPECT(dataset_open(&s, paths[f], part, 3) == 0);
			EXPECT(dataset_load(&l, paths[f], part, 3) == 0);
			EXPECT(s.map != NULL && s.first == l.first && s.n == l.n);
			EXPECT(same_rows(&s, &l, idx, 500, 17));
			dataset_unmap(&s);
			EXPECT(s.map == NULL);
			EXPECT(same_rows(&s, &l, idx, 500, 17));
			dataset_free(&s);
			dataset_free(&l);
		}

	/* Cut at row 2000's last byte but one of x: a row pages beyond it,
	 * mapped (SIGBUS), and with pread (a short read) that row and row 2000
	 * itself, each naming row 2000 as where the file ends; then before x. (Mapped, row 2000 reads its last byte as 0, the rest of a
	 * page past the end as mappings do: the check after the batch, that
	 * the file is as it was, is what catches a cut there.) */
	struct dataset d;
	EXPECT(dataset_open(&d, u8, 0, 1) == 0);
	long cut = (long)d.x_at + 2000L * SD + SD - 1;
	check_cut(&d, cut, 2900, 2000);
	check_other_sigbus(&d, cut + 2 * 4096);
	dataset_unmap(&d);
	check_cut(&d, cut, 2900, 2000);
	check_cut(&d, cut, 2000, 2000);
	check_cut(&d, (long)d.x_at - 5, 1, -1); /* before x: nothing of it left */
	dataset_free(&d);
	free(x8), free(xf), free(y);
	user_error_clear();
}

int main(void)
{
	char dir[512];
	if (fixture_tmpdir(dir, sizeof(dir), "dataset-stream"))
		return 1;
	check_streamed(dir);
	fixture_rmtree(dir);
	return unit_done("test_dataset_stream");
}
