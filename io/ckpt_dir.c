/* The checkpoint folder of ckpt.h: file names by step, listing newest
 * first, pruning, and the lock that keeps it to one job. */
#include "ckpt.h"
#include "check.h"
#include "log.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void ckpt_path(const char *dir, long global_step, char *buf, size_t len)
{
	snprintf(buf, len, "%s/ckpt-%08ld.h5", dir, global_step);
}

/* The step of a checkpoint's file name "ckpt-<8 or more digits>.h5", or -1. */
static long step_of(const char *file)
{
	if (strncmp(file, "ckpt-", 5))
		return -1;
	const char *p = file + 5;
	size_t digits = strspn(p, "0123456789");
	if (digits < 8 || digits > 18 || strcmp(p + digits, ".h5"))
		return -1;
	return strtol(p, NULL, 10);
}

static int by_step_desc(const void *a, const void *b)
{
	long sa = ((const struct ckpt_file *)a)->step, sb = ((const struct ckpt_file *)b)->step;
	return sa < sb ? 1 : sa > sb ? -1 : 0;
}

struct ckpt_file *ckpt_list(const char *dir, int *n)
{
	struct ckpt_file *files = NULL;
	int cap = 0;
	*n = 0;
	DIR *d = opendir(dir);
	struct dirent *ent;
	while (d && (ent = readdir(d))) {
		long step = step_of(ent->d_name);
		if (step < 0)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			struct ckpt_file *grown = realloc(files, sizeof(*files) * (size_t)cap);
			ALLOC_CHECK(grown);
			files = grown;
		}
		snprintf(files[*n].path, FILE_PATH_LEN, "%s/%s", dir, ent->d_name);
		files[(*n)++].step = step;
	}
	if (d)
		closedir(d);
	if (*n)
		qsort(files, (size_t)*n, sizeof(*files), by_step_desc);
	return files;
}

void ckpt_prune(const char *dir, int keep, long upto)
{
	int n, kept = 0;
	struct ckpt_file *files = ckpt_list(dir, &n);
	for (int i = 0; i < n; i++) {
		if (files[i].step > upto || kept++ < keep)
			continue;
		if (unlink(files[i].path))
			log_warn("cannot delete old checkpoint %s: %s", files[i].path, strerror(errno));
	}
	free(files);
	/* ".ckpt-<step>.h5[.<pid>].tmp": a write that never reached its
	 * rename. The caller holds the folder's lock: no other job writes. */
	DIR *d = opendir(dir);
	struct dirent *ent;
	while (d && (ent = readdir(d))) {
		size_t len = strlen(ent->d_name);
		if (len > 10 && !strncmp(ent->d_name, ".ckpt-", 6) &&
		    !strcmp(ent->d_name + len - 4, ".tmp")) {
			char path[FILE_PATH_LEN];
			snprintf(path, sizeof(path), "%s/%s", dir, ent->d_name);
			unlink(path);
		}
	}
	if (d)
		closedir(d);
}

int ckpt_check_names(const char *dir)
{
	int n;
	struct ckpt_file *files = ckpt_list(dir, &n);
	int rc = 0;
	for (int i = 0; i < n && !rc; i++) {
		struct stat st;
		if (lstat(files[i].path, &st) == 0 && !S_ISREG(st.st_mode))
			rc = user_error("--ckpt-dir: %s is not a file, and a checkpoint would be written "
					"under its name; move it away", files[i].path);
	}
	free(files);
	return rc;
}

/* The lock file's text: "host pid start-time". */
static void lock_text(char *buf, size_t len)
{
	char host[64] = "?";
	gethostname(host, sizeof(host) - 1);
	time_t now = time(NULL);
	char when[32];
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	snprintf(buf, len, "%s %ld %s\n", host, (long)getpid(), when);
}

/* Whether the holder text names a process that is provably gone: on this
 * host, and no such pid. */
static int holder_gone(const char *text)
{
	char host[64] = "", me[64] = "";
	long pid = 0;
	gethostname(me, sizeof(me) - 1);
	return sscanf(text, "%63s %ld", host, &pid) == 2 && !strcmp(host, me) && pid > 0 &&
	       kill((pid_t)pid, 0) && errno == ESRCH;
}

int ckpt_lock(const char *dir)
{
	char path[FILE_PATH_LEN], held[256] = "", mine[256];
	snprintf(path, sizeof(path), "%s/" CKPT_LOCK_NAME, dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return user_error("--ckpt-dir %s: cannot create its lock %s: %s", dir, path,
				  strerror(errno));
	ssize_t got = pread(fd, held, sizeof(held) - 1, 0);
	held[got > 0 ? got : 0] = 0;
	held[strcspn(held, "\n")] = 0;
	/* Advisory locking; where the file system has none (some network
	 * ones), the holder recorded in the file decides. */
	int locked = flock(fd, LOCK_EX | LOCK_NB) == 0;
	int busy = !locked && errno == EWOULDBLOCK;
	if (busy || (!locked && held[0] && !holder_gone(held))) {
		close(fd);
		return user_error("--ckpt-dir %s is in use by another mtrain job (%s, by %s); "
				  "one job per folder%s", dir, held[0] ? held : "holder unknown",
				  path, busy ? "" : " (a stale lock: remove it if that job is gone)");
	}
	/* The holder's name is for messages: a full disk that cannot take it
	 * still leaves the lock itself held. */
	lock_text(mine, sizeof(mine));
	if (ftruncate(fd, 0) == 0 && pwrite(fd, mine, strlen(mine), 0) < 0)
		log_warn("--ckpt-dir %s: cannot record the job in its lock %s: %s", dir, path,
			 strerror(errno));
	return fd;
}

void ckpt_unlock(const char *dir, int fd)
{
	if (fd < 0)
		return;
	char path[FILE_PATH_LEN];
	snprintf(path, sizeof(path), "%s/" CKPT_LOCK_NAME, dir);
	unlink(path);
	close(fd);
}
