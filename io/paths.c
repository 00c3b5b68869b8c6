/* The output path checks of paths.h. */
#include "paths.h"
#include "log.h"
#include "mtrain.h"

#include <errno.h>
#include <stdio.h>
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
