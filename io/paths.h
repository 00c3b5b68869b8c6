/* Checks on the paths a run will write, made before anything is written. */
#pragma once
#include <stdio.h>

#include "mtrain.h"

/* Whether path (a folder when dir) exists writable, or could be created in
 * a writable parent or in new_dir (NULL: none), a folder this run will
 * create; flag names the option in the message (e.g. "--metrics"). 0, or
 * -1 with a user_error. */
int path_check_writable(const char *flag, const char *path, int dir, const char *new_dir);
/* Whether a and b (neither "") name the same file: the same text, or the
 * same existing file (device and inode). */
int path_same_file(const char *a, const char *b);
/* Whether path's folder is dir (the same text or the same folder). */
int path_in_folder(const char *path, const char *dir);
/* A new file beside path with a unique name ("path.XXXXXX", in tmp), open
 * for writing; NULL with errno. Write to it, then path_commit_temp. */
FILE *path_create_temp(const char *path, char *tmp, size_t len);
/* Flushes, syncs and closes f, then renames tmp to path: a reader sees
 * the old file or the whole new one. 0, or -1 with errno (tmp removed). */
int path_commit_temp(FILE *f, const char *tmp, const char *path);
