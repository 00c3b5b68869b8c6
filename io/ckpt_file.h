/* Inside io/: the checkpoint readers that run in this process (ckpt.c runs
 * them in a child process for everyone else), and the helper the writer
 * and the readers share. Below ckpt.c: it includes this, never the other
 * way. */
#pragma once
#include <stddef.h>

#include "ckpt_format.h"

/* The in-file path of a logical name: '/' would make groups, so it is '.'. */
void ckpt_file_path_of(const char *name, char *buf, size_t len);
/* ckpt_read, ckpt_read_meta and ckpt_read_all of ckpt.h, in this process:
 * a forged file may crash HDF5 here. */
int ckpt_read_here(const char *path, struct ckpt_var *vars, int n, int allow_extra,
		   struct ckpt_meta *meta);
int ckpt_read_meta_here(const char *path, struct ckpt_meta *meta);
int ckpt_read_all_here(const char *path, struct ckpt_var **vars, int *n,
		       struct ckpt_meta *meta);

struct sandbox_pipe;
/* A variable's name and shape down a sandbox pipe (sandbox.h), member by
 * member; the receiver bounds the shape, then allocates the data (which
 * moves apart, ckpt_var_move_data): the readers that run in a child and
 * send variables back (ckpt.c, weights_file.c) share them. */
void ckpt_var_move_head(struct sandbox_pipe *p, struct ckpt_var *v);
/* A variable's values, into the data the receiver already has. */
void ckpt_var_move_data(struct sandbox_pipe *p, struct ckpt_var *v);
