/* What the communicator's own files share (internal to mpi/): comm.c's
 * release of the data plane at the end and the trainer's hooks, safe to
 * call whether it set them or not; MPI's chunking. */
#pragma once
#include "comm.h"

/* MPI counts are int: large buffers go in chunks of this many. */
#define MPI_CHUNK ((size_t)1 << 30)

/* Releases the data plane in use, if any (comm_finalize). */
void comm_plane_release(struct comm *c);

/* c->hooks' span_begin(phase), span_end() and recording(), or nothing
 * (recording: 0) where the hook is NULL. */
void comm_span_begin(const struct comm *c, const char *phase);
void comm_span_end(const struct comm *c);
int comm_span_recording(const struct comm *c);
