/* The collective watchdog of the MPI communicator (comm_mpi.c, comm_host.c)
 * and its roll call, used by the NCCL plane too. Not for other modules. */
#pragma once
#include <stddef.h>

#include "comm.h"

/* Starts the thread that ends a collective run past c->timeout and answers
 * other ranks' roll calls; the roll calls' own communicator. At comm_init. */
void watchdog_start(struct comm *c);
/* Stops both before MPI_Finalize. */
void watchdog_stop(void);
/* A collective named op (e.g. "all-reduce of gradients") starts / ended. */
void watchdog_enter(struct comm *c, const char *op);
void watchdog_leave(void);
/* The same bookkeeping for a device collective (NCCL), whose own waits
 * give up after the timeout: no deadline here, only where a roll call
 * finds this rank. */
void watchdog_count(int in);
/* Asks every other rank, within 2 s, where it is, and writes into buf the
 * ranks that are not in this rank's collective: "1 (at step 41, not in a
 * collective), 3 (no answer: stopped or dead)", or "none found". Callable
 * from the watchdog thread or the main thread. */
void watchdog_roll_call(struct comm *c, char *buf, size_t len);
