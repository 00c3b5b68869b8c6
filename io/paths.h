/* Checks on the paths a run will write, made before anything is written. */
#pragma once

/* Whether path (a folder when dir) exists writable, or could be created in
 * a writable parent or in new_dir (NULL: none), a folder this run will
 * create; flag names the option in the message (e.g. "--metrics"). 0, or
 * -1 with a user_error. */
int path_check_writable(const char *flag, const char *path, int dir, const char *new_dir);
