/* The checkpoint folder of ckpt.h: file names by step, listing newest
 * first, pruning. */
#include "ckpt.h"
#include "check.h"
#include "log.h"

#include <dirent.h>
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
	long sa = step_of(strrchr((const char *)a, '/') + 1);
	long sb = step_of(strrchr((const char *)b, '/') + 1);
	return sa < sb ? 1 : sa > sb ? -1 : 0;
}

int ckpt_list(const char *dir, char (*paths)[FILE_PATH_LEN], int max)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *ent;
	while ((ent = readdir(d)) && n < max)
		if (step_of(ent->d_name) >= 0)
			snprintf(paths[n++], FILE_PATH_LEN, "%s/%s", dir, ent->d_name);
	closedir(d);
	qsort(paths, n, sizeof(paths[0]), by_step_desc);
	return n;
}

void ckpt_prune(const char *dir, int keep, long upto)
{
	char (*paths)[FILE_PATH_LEN] = xmalloc(sizeof(*paths) * CKPT_MAX_FILES);
	int n = ckpt_list(dir, paths, CKPT_MAX_FILES), kept = 0;
	for (int i = 0; i < n; i++) {
		if (step_of(strrchr(paths[i], '/') + 1) > upto || kept++ < keep)
			continue;
		if (unlink(paths[i]))
			log_warn("cannot delete old checkpoint %s: %s", paths[i], strerror(errno));
	}
	free(paths);
	/* ".ckpt-<step>.h5.tmp": a write that never reached its rename. */
	DIR *d = opendir(dir);
	struct dirent *ent;
	while (d && (ent = readdir(d))) {
		size_t len = strlen(ent->d_name);
		if (len > 13 && !strncmp(ent->d_name, ".ckpt-", 6) &&
		    !strcmp(ent->d_name + len - 7, ".h5.tmp")) {
			char path[FILE_PATH_LEN];
			snprintf(path, sizeof(path), "%s/%s", dir, ent->d_name);
			unlink(path);
		}
	}
	if (d)
		closedir(d);
}
