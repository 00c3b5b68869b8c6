/* HDF5 checkpoints keyed by logical variable name. One file per checkpoint,
 * "ckpt-<global step, 8 digits>.h5", written by one rank under a temporary
 * name, fsynced and renamed into place, so a crash never leaves a half-written
 * file under a checkpoint's name. Every dataset is chunked with the Fletcher32
 * checksum and carries a string attribute "name" with its canonical name; the
 * path inside the file is that name with '/' written as '.'. Nothing in a
 * checkpoint depends on how many ranks wrote it. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mtrain.h"
#include "shape.h"

#define CKPT_FORMAT "mtrain-checkpoint"
/* 2: HDF5 1.10's checksummed metadata, a digest of every variable's values
 * and of the root attributes. Version 1 files still read. */
#define CKPT_FORMAT_VERSION 2
/* Each dataset's FNV-1a 64 of its values as written (int64). */
#define CKPT_DIGEST_ATTR "fnv1a64"
#define CKPT_NAME_LEN 128
/* The lock file of a checkpoint folder. */
#define CKPT_LOCK_NAME ".mtrain.lock"

/* One float32 variable: written from data, or read into data. */
struct ckpt_var {
	char name[CKPT_NAME_LEN]; /* e.g. "dense/kernel/ExponentialMovingAverage" */
	int ndim;                 /* 1 to SHAPE_MAX_RANK */
	long shape[SHAPE_MAX_RANK]; /* e.g. {784, 256}, {3, 3, 1, 32}; 0 past ndim */
	float *data;              /* host memory, ckpt_var_cells(v) floats */
};

/* The number of floats in v: the product of its shape. */
static inline size_t ckpt_var_cells(const struct ckpt_var *v)
{
	return shape_cells(v->ndim, v->shape);
}

/* Root attributes. */
struct ckpt_meta {
	int format_version;  /* as read, 1 to CKPT_FORMAT_VERSION; ckpt_write
			      * writes CKPT_FORMAT_VERSION whatever it holds */
	long global_step;    /* completed optimizer updates, e.g. 2340 */
	long epoch;          /* epoch of the next step, e.g. 5 */
	long step_in_epoch;  /* global batches of that epoch already done */
	int batch;           /* global batch the position counts in, e.g. 128 */
	uint64_t seed;       /* e.g. 42 */
	int world_size;      /* ranks that wrote it, for information */
	int input_dim;       /* D of the model, e.g. 784 */
	int classes;         /* C of the model, e.g. 10 */
	long train_rows;     /* rows of the training set the position counts in */
	char *config;        /* the full configuration, key = value lines */
	char created[64];    /* UTC, ISO 8601 */
	char version[32];    /* mtrain version */
	uint64_t digest;     /* FNV-1a 64 of the fields above (format 2 on);
			      * ckpt_write computes it */
};

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
 * variable-length. meta->config is malloc'd. */
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
 * entries, each data malloc'd (free with ckpt_free_vars). 0, or RC_CORRUPT with a
 * user_error when the file cannot be opened or fails its checksums. */
int ckpt_read_all(const char *path, struct ckpt_var **vars, int *n, struct ckpt_meta *meta);
void ckpt_free_vars(struct ckpt_var *vars, int n);
/* Prints meta and one line per variable (name, shape, dtype, FNV-1a 64
 * checksum of the bytes, min, max, mean), or with json the same facts as
 * one JSON object ({"file", "format", the root attributes, "variables":
 * [{"name", "shape", "dtype", "fnv1a64", "min", "max", "mean"}]}).
 * 0 or -1 (user_error). */
int ckpt_inspect(const char *path, int json, FILE *out);
