/* The path checks and atomic file writes of paths.h. */
#include "paths.h"
#include "log.h"
#include "mtrain.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int path_check_writable(const char *flag, const char *path, int dir, const char *new_dir)
{
	struct stat st;
	if (stat(path, &st) == 0) {
		if (dir && !S_ISDIR(st.st_mode))
			return user_error("%s %s: exists and is not a folder", flag, path);
		if (!dir && S_ISDIR(st.st_mode))
			return user_error("%s %s: is a folder", flag, path);
		if (access(path, W_OK))
			return user_error("%s %s: not writable: %s", flag, path, strerror(errno));
		return 0;
	}
	if (errno != ENOENT) /* a name too long, a folder not searchable, ... */
		return user_error("%s %s: %s", flag, path, strerror(errno));
	char parent[PATH_LEN];
	snprintf(parent, sizeof(parent), "%s", path);
	char *slash = strrchr(parent, '/');
	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else if (slash == parent)
		slash[1] = 0;
	else
		*slash = 0;
	/* Inside a folder this run will create (--metrics in --ckpt-dir). */
	if (new_dir && !strcmp(parent, new_dir))
		return 0;
	if (access(parent, W_OK))
		return user_error("%s %s: cannot create it in %s: %s", flag, path, parent,
				  strerror(errno));
	return 0;
}

int path_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	if (!a[0] || !b[0])
		return 0;
	if (!strcmp(a, b))
		return 1;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int path_in_folder(const char *path, const char *dir)
{
	char parent[PATH_LEN];
	snprintf(parent, sizeof(parent), "%s", path);
	char *slash = strrchr(parent, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(parent, sizeof(parent), ".");
	return path_same_file(parent, dir);
}

FILE *path_create_temp(const char *path, char *tmp, size_t len)
{
	if ((size_t)snprintf(tmp, len, "%s.XXXXXX", path) >= len) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	int fd = mkstemp(tmp);
	mode_t mask = umask(0);
	umask(mask); /* the file gets the mode an open() would have given it */
	if (fd >= 0)
		fchmod(fd, 0666 & ~mask);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "wb");
	if (fd >= 0 && !f) {
		close(fd);
		unlink(tmp);
	}
	return f;
}

int path_commit_temp(FILE *f, const char *tmp, const char *path)
{
	int bad = ferror(f) || fflush(f) || fsync(fileno(f));
	int why = bad ? errno : 0;
	if (fclose(f) || bad || rename(tmp, path)) {
		if (why)
			errno = why;
		why = errno;
		unlink(tmp);
		errno = why;
		return -1;
	}
	return 0;
}
