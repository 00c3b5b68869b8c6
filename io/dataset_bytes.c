/* A data file's bytes where dataset_open found them (dataset_io.h): read
 * from a mapping of the file, or with pread where it is not mapped; a read
 * that finds the file cut short, or changed, says so in one line; the
 * checks that what the file says lies within it. Below the streamed rows
 * (dataset_stream.c) and the token windows (dataset_tokens.c), which both
 * read through it. */
#include "dataset.h"
#include "dataset_io.h"
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* x or y stored whole lies within the file's bytes. */
int dataset_within(const struct dataset *d, const char *name, long long at, double len)
{
	if (at >= 0 && (double)at + len > (double)d->identity[ID_SIZE])
		return user_error("%s: dataset '%s' lies past the end of the file (bytes %lld to "
				  "%.0f of %lld): truncated or forged", d->path, name, at,
				  (double)at + len, d->identity[ID_SIZE]);
	return 0;
}

/* The file is as it was opened: the same size and modification time. */
int dataset_unchanged(const struct dataset *d, char *why)
{
	struct stat st;
	if (fstat(d->fd, &st)) {
		snprintf(why, DATASET_WHY_LEN, "%s: cannot stat: %s", d->path, strerror(errno));
		return -1;
	}
	long long id[4];
	dataset_identity(&st, id);
	if (id[ID_SIZE] == d->identity[ID_SIZE] && id[ID_MTIME] == d->identity[ID_MTIME])
		return 0;
	snprintf(why, DATASET_WHY_LEN, "%s: the file changed while mtrain was reading it (%lld "
		 "bytes when opened, now %lld%s); a data file must stay as it is during a run",
		 d->path, d->identity[ID_SIZE], id[ID_SIZE],
		 id[ID_SIZE] == d->identity[ID_SIZE] ? ", and modified" : "");
	return -1;
}

/* A mapped file cut short under a read raises SIGBUS: the thread reading
 * it (t_bus set) jumps back to dataset_map_copy, which says so in one line as
 * pread's path does; any other SIGBUS goes to the handler there was before
 * (check.c's crash line): a fault by retrying the access with it, a sent
 * one by raising it again. */
static __thread sigjmp_buf *t_bus;
static struct sigaction g_bus_before;
static pthread_once_t g_bus_once = PTHREAD_ONCE_INIT;

static void on_bus(int sig, siginfo_t *si, void *ctx)
{
	(void)ctx;
	if (t_bus && si->si_code > 0)
		siglongjmp(*t_bus, 1);
	sigaction(SIGBUS, &g_bus_before, NULL);
	if (si->si_code <= 0)
		raise(sig);
}

static void catch_bus(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_bus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER; /* left by a jump: not left blocked */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &g_bus_before);
}

/* Maps d's file when x is stored whole and the file is at most
 * DATASET_MAP_MAX bytes; where it cannot be mapped, pread reads it. */
void dataset_map_file(struct dataset *d)
{
	long long size = d->identity[ID_SIZE];
	if (d->x_at < 0 || size <= 0 || (double)size > (double)DATASET_MAP_MAX)
		return;
	void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, d->fd, 0);
	if (p == MAP_FAILED)
		return;
	pthread_once(&g_bus_once, catch_bus);
	d->map = p;
	d->map_len = (size_t)size;
}

/* The len bytes at offset at that rows [row, row + count) of name take
 * are not all in the file (a read came up short, or faulted): one line in
 * why, naming the row of name in which the file now ends. */
static void cut_short(const struct dataset *d, long long at, size_t len, const char *name,
		      long row, long count, char *why)
{
	long long stride = (long long)(len / (size_t)count), first = at - row * stride;
	struct stat st;
	if (fstat(d->fd, &st) || st.st_size >= at + (long long)len)
		snprintf(why, DATASET_WHY_LEN, "%s: the file changed while mtrain was reading it "
			 "(a read of row %ld of '%s' found it cut short)", d->path, row, name);
	else if (st.st_size <= first)
		snprintf(why, DATASET_WHY_LEN, "%s: the file ends at byte %lld, before '%s' begins (it "
			 "was truncated during the run)", d->path, (long long)st.st_size, name);
	else
		snprintf(why, DATASET_WHY_LEN, "%s: the file ends at byte %lld, within row %lld of "
			 "'%s' (it was truncated during the run)", d->path, (long long)st.st_size,
			 (st.st_size - first) / stride, name);
}

/* len bytes at offset at of the mapped file into buf, or, with scale, as
 * many uint8 values scaled into the floats at buf (dataset_scale_u8). */
int dataset_map_copy(const struct dataset *d, long long at, void *buf, size_t len, int scale,
		    const char *name, long row, long count, char *why)
{
	sigjmp_buf jump;
	if (sigsetjmp(jump, 0)) {
		t_bus = NULL;
		cut_short(d, at, len, name, row, count, why);
		return -1;
	}
	t_bus = &jump;
	atomic_signal_fence(memory_order_seq_cst);
	if (scale)
		dataset_scale_u8(d->map + at, len, buf);
	else
		memcpy(buf, d->map + at, len);
	atomic_signal_fence(memory_order_seq_cst);
	t_bus = NULL;
	return 0;
}

int dataset_read_at(const struct dataset *d, long long at, void *buf, size_t len,
		   const char *name, long row, long count, char *why)
{
	if (d->map)
		return dataset_map_copy(d, at, buf, len, 0, name, row, count, why);
	for (size_t done = 0; done < len;) {
		ssize_t got = pread(d->fd, (char *)buf + done, len - done, (off_t)(at + (long long)done));
		if (got > 0) {
			done += (size_t)got;
			continue;
		}
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			snprintf(why, DATASET_WHY_LEN, "%s: cannot read row %ld of '%s': %s", d->path,
				 row, name, strerror(errno));
		else
			cut_short(d, at, len, name, row, count, why);
		return -1;
	}
	return 0;
}
