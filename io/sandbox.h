/* Files nobody vouches for (data sets, checkpoints) are read in a child
 * process. HDF5 1.10 can crash, or write past a buffer, on a forged file
 * before mtrain can tell it from a valid one (tests/fuzz/known-hdf5): in a
 * child, a crash becomes one user error naming the file, and the memory of
 * the training process is never touched by HDF5 reading that file. */
#pragma once
#include <stddef.h>

/* 1 by default; the fuzz targets turn it off to find crashes in-process. */
extern int sandbox_enabled;

/* One end of the pipe between the child that reads and its parent. */
struct sandbox_pipe {
	int fd;
	int sending; /* 1 in the child, 0 in the parent */
	int failed;  /* the pipe broke: the child died mid-way */
};

/* Moves len bytes at buf: the child writes them, the parent reads them
 * into buf. After a failure it moves nothing (the parent's buf is zeroed). */
void sandbox_move(struct sandbox_pipe *p, void *buf, size_t len);

/* Runs reader(arg) in a child process. When it returns 0, move(arg, pipe)
 * runs in the child to send the result and then in the parent to receive
 * it into arg (the parent allocates what it receives; the same function
 * states the layout for both sides). Returns reader's return value, with its
 * user error carried over, or RC_CORRUPT with "PATH: reading it crashed
 * ..." when the child died. Without sandbox_enabled, reader(arg) runs here. */
int sandbox_read(const char *path, int (*reader)(void *arg),
		 void (*move)(void *arg, struct sandbox_pipe *p), void *arg);
