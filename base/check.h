/* One check macro per library. A failing call is a programming or system
 * error: print the call, file:line, rank and host, then abort every rank so
 * that none is left waiting in a collective. */
#pragma once
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#define MT_NORETURN [[noreturn]]
#else
#define MT_NORETURN _Noreturn
#endif

/* Prints "mtrain: <lib> error: <call> failed (<detail>) at file:line on rank R
 * (host)" and calls MPI_Abort. Never returns. */
MT_NORETURN void check_fail(const char *lib, const char *call, const char *detail,
			  const char *file, int line);

/* MPI calls return MPI_SUCCESS. */
#define MPI_CHECK(call)                                                        \
	do {                                                                   \
		int mpi_check_rc_ = (call);                                    \
		if (mpi_check_rc_ != 0)                                        \
			check_fail("MPI", #call, mpi_error_text(mpi_check_rc_),    \
				   __FILE__, __LINE__);                        \
	} while (0)

/* HDF5 calls return a negative value on failure. */
#define H5_CHECK(call)                                                         \
	do {                                                                   \
		if ((long long)(call) < 0)                                     \
			check_fail("HDF5", #call, "negative return", __FILE__,     \
				   __LINE__);                                  \
	} while (0)

/* Out of host memory is a system error like any other. */
#define ALLOC_CHECK(ptr)                                                       \
	do {                                                                   \
		if (!(ptr))                                                    \
			check_fail("libc", #ptr, "out of memory", __FILE__,        \
				   __LINE__);                                  \
	} while (0)

/* From now on a crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) prints
 * one line naming this rank, its host and the signal, and a backtrace,
 * then ends the process at once, so mpirun ends the job: no hang in a
 * crash handler. (In the sanitizer build too: its checks of memory
 * accesses do not go through these signals.) */
void check_catch_crashes(void);

/* In a child process that reads a file for its parent (io/sandbox.c): a
 * crash is left to kill it by its signal, and check_fail ends the child
 * alone (exit status CHECK_CHILD_FAILED), never the parent's MPI job. */
void check_in_child(void);
#define CHECK_CHILD_FAILED 70

/* Text of an MPI error code, for MPI_CHECK. */
const char *mpi_error_text(int rc);

/* malloc that never returns NULL (aborts through check_fail instead). */
void *xmalloc(size_t bytes);
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);

#ifdef __cplusplus
}
#endif
