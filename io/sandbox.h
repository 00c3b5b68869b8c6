/* Files nobody vouches for (data sets, checkpoints) are read in a child
 * process. HDF5 1.10 can crash, or write past a buffer, on a forged file
 * before mtrain can tell it from a valid one (tests/fuzz/known-hdf5): in a
 * child, a crash becomes one user error naming the file, and the memory of
 * the training process is never touched by HDF5 reading that file.
 *
 * The child is a fresh program, not a fork that goes on running: the
 * training process has other threads (MPI's, the watchdog), and a forked
 * copy could find a lock one of them held (the sanitizer build's allocator
 * hung that way), or pages an RDMA transport pinned. The parent forks and at
 * once execs its own binary (/proc/self/exe) with MTRAIN_SANDBOX set; a
 * constructor in this file sees it before main, reads the request from one
 * pipe, runs the reader and sends the result down another, and exits. Any
 * program linking io/ (mtrain, the tests' tools) can therefore read this
 * way. */
#pragma once
#include <stddef.h>

/* 1 by default; the fuzz targets turn it off to find crashes in-process. */
extern int sandbox_enabled;

/* One end of a pipe between the child that reads and its parent. */
struct sandbox_pipe {
	int fd;
	int sending; /* 1 on the side that writes */
	int failed;  /* the pipe broke: the other side died mid-way */
};

/* Moves len bytes at buf: the sending side writes them, the other reads
 * them into buf. After a failure it moves nothing (the reader's buf is
 * zeroed). */
void sandbox_move(struct sandbox_pipe *p, void *buf, size_t len);
/* Moves a string of fewer than max bytes: the receiving side gets a
 * malloc'd copy in *s (NULL after a failure or when it was too long). */
void sandbox_move_str(struct sandbox_pipe *p, char **s, size_t max);

/* A reader the child can run. ask moves the request (the parent sends
 * what the reader needs, the child receives it into a zeroed arg of
 * arg_size bytes, allocating what it receives); read runs in the child;
 * when it returned 0, move sends the result (child) and receives it into
 * the caller's arg (parent, which allocates what it receives). One
 * function per direction pair states the layout for both sides. arg's
 * first member is the file's path (char *): MTRAIN_TEST_FAULT=reader:TEXT
 * crashes the child on the paths that hold TEXT. */
struct sandbox_reader {
	const char *name; /* e.g. "checkpoint" */
	size_t arg_size;
	void (*ask)(void *arg, struct sandbox_pipe *p);
	int (*read)(void *arg);
	void (*move)(void *arg, struct sandbox_pipe *p);
};

/* The readers a child may be asked to run (the constructor finds them by
 * name). */
extern const struct sandbox_reader ckpt_sandbox_reader, dataset_sandbox_reader,
	weights_sandbox_reader;

/* Runs r on arg in a child process. Returns r->read's return value, with
 * its user error carried over, or RC_CORRUPT with "PATH: reading it crashed
 * ..." when the child died of a crash, or RC_USER when it was killed from
 * outside or ran out of memory. Without sandbox_enabled, or where no child
 * can be started, r->read(arg) runs here. */
int sandbox_read(const char *path, const struct sandbox_reader *r, void *arg);
