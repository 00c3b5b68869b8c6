/* --timeline: every rank records spans (data, forward, backward, each
 * all-reduce, optimizer, EMA update and sync, evaluation, checkpoint) with
 * their step; at the end rank 0 writes them all as one Chrome trace (the
 * JSON event format Perfetto and chrome://tracing open), one track per
 * rank, to answer which rank waits, and for what. */
#pragma once
#include "comm.h"

/* Starts recording steps first..last (global steps, inclusive; last < 0:
 * to the end) into a buffer taken now, and gives c its hooks (comm.h) to
 * record its collectives. Collective: the ranks' clocks are aligned at a
 * barrier. path NULL or "": no timeline (every call below is then a
 * no-op). */
void timeline_init(const char *path, long first, long last, struct comm *c);
/* Whether step is recorded (the caller then waits for the backend at each
 * phase boundary, so spans are exact on a GPU too). */
int timeline_wants(long step);
/* Whether the step under way is recorded. */
int timeline_recording(void);
/* The step under way, for timeline_begin/end. */
void timeline_at(long step);
/* A span of phase (a string literal) from t0 to t1 (log_now() seconds)
 * during step. */
void timeline_span(const char *phase, double t0, double t1, long step);
/* Opens and closes a span at log_now(), for code that does not know the
 * step (the communicator, through its hooks): it belongs to the step under
 * way. */
void timeline_begin(const char *phase);
void timeline_end(void);
/* Gathers every rank's spans and rank 0 writes the file. Collective. 0, or
 * -1 after printing why (the file could not be written). */
int timeline_write(struct comm *c);
