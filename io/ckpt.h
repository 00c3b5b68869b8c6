/* HDF5 checkpoints keyed by logical variable name. One file per checkpoint,
 * "ckpt-<global step, 8 digits>.h5", written by one rank under a temporary
 * name, fsynced and renamed into place, so a crash never leaves a half-written
 * file under a checkpoint's name. Every dataset is chunked with the Fletcher32
 * checksum and carries a string attribute "name" with its canonical name; the
 * path inside the file is that name with '/' written as '.'. Nothing in a
 * checkpoint depends on how many ranks wrote it.
 *
 * The public face of the checkpoint files: what a file holds
 * (ckpt_format.h); the readers, run in a child process (ckpt.c, over
 * ckpt_file.c); writing (ckpt_write.c); the folder (ckpt_dir.c); inspect
 * (ckpt_inspect.c). */
#pragma once
#include <stddef.h>
#include <stdio.h>

#include "ckpt_format.h"

/* "dir/ckpt-00002340.h5" */
void ckpt_path(const char *dir, long global_step, char *buf, size_t len);
/* Writes vars and meta to ckpt_path(dir, meta->global_step) atomically.
 * Returns 0, or -1 after printing why (a system error: disk full, ...); the
 * final name is then untouched. */
int ckpt_write(const char *dir, const struct ckpt_var *vars, int n,
	       const struct ckpt_meta *meta);
/* Reads path into vars by name with strict shape checks. Returns 0; RC_USER with a
 * user_error listing one line per mismatch (missing, extra unless
 * allow_extra, or differently shaped variable); RC_CORRUPT with a user_error when the
 * file cannot be opened, fails its checksums, or holds what mtrain never
 * writes (a variable not float32 of rank 1 to SHAPE_MAX_RANK, a name stored
 * twice), a format version above CKPT_FORMAT_VERSION, or lacks a required root
 * attribute of its version. Optional ones read as their default: config
 * NULL, created and version "?". String attributes may be fixed- or
 * variable-length. meta->config is malloc'd (ckpt_meta_free). A file HDF5
 * cannot read whole (a dataset whose header, datatype or name does not
 * read) is RC_CORRUPT, never a missing variable. */
int ckpt_read(const char *path, struct ckpt_var *vars, int n, int allow_extra,
	      struct ckpt_meta *meta);
/* Reads only the root attributes of path. 0, or RC_CORRUPT with a user_error. */
int ckpt_read_meta(const char *path, struct ckpt_meta *meta);
/* One checkpoint file of a folder. */
struct ckpt_file {
	char path[FILE_PATH_LEN]; /* e.g. "checkpoints/ckpt-00002340.h5" */
	long step;                /* e.g. 2340 */
};
/* The checkpoint files of dir, newest first, however many: a malloc'd
 * array of *n (NULL and 0 when dir does not exist or holds none). */
struct ckpt_file *ckpt_list(const char *dir, int *n);
/* A user_error (-1) when something that is not a regular file stands under
 * a checkpoint's name in dir (a write there would fail at that step). */
int ckpt_check_names(const char *dir);
/* Takes dir's lock for this process and records "host pid start-time" in
 * it: the descriptor, or -1 with a user_error naming the holder when
 * another job has it. Advisory locking (flock) where the file system has
 * it, so a dead job's lock is free; elsewhere a recorded holder on this
 * host whose pid is gone is taken over. */
int ckpt_lock(const char *dir);
/* Releases the lock (removing its file); -1 is a no-op. */
void ckpt_unlock(const char *dir, int fd);
/* Deletes all but the newest keep checkpoints of dir at or below step upto
 * (those above belong to another run and are left alone), and temporary
 * files a crashed write left. The caller holds dir's lock. */
void ckpt_prune(const char *dir, int keep, long upto);
/* Reads every float32 variable of path: *vars is a malloc'd array of *n
 * entries, each data malloc'd (free with ckpt_free_vars, and meta with
 * ckpt_meta_free: ckpt_format.h). 0, or RC_CORRUPT with a
 * user_error when the file cannot be opened or fails its checksums. */
int ckpt_read_all(const char *path, struct ckpt_var **vars, int *n, struct ckpt_meta *meta);
/* (ckpt_inspect.c) Prints meta and one line per variable (name, shape,
 * dtype, FNV-1a 64 checksum of the bytes, min, max, mean), or with json the same facts as
 * one JSON object ({"file", "format", the root attributes, "variables":
 * [{"name", "shape", "dtype", "fnv1a64", "min", "max", "mean"}]}).
 * 0 or -1 (user_error). */
int ckpt_inspect(const char *path, int json, FILE *out);
