/* What a training run prints and records (rank 0): the start line, the
 * progress lines, the closing timing line, and their metrics events. The
 * lines are made to be read by programs too: "key value" pairs. */
#pragma once
#include "backend.h"
#include "comm.h"
#include "config.h"
#include "dataset.h"
#include "model.h"

/* Seconds spent per phase, summed over steps (rank-local). */
struct timing {
	double data, forward, backward, allreduce, optimizer, ema;
	double data_wait; /* of data: blocked on the reader thread (not ready) */
	double rows; /* rows this rank computed */
};

/* Training since the last progress line. */
struct progress {
	long steps;   /* steps taken */
	long rows;    /* this rank's rows */
	double since; /* log_now() at the last line */
	double aside; /* seconds of evaluation and checkpoints, not training */
	double norm;  /* --clip-norm: the last step's global gradient norm
		       * (before clipping); else 0, and not shown */
	long clipped; /* steps whose gradients were scaled down */
};

/* The run's first lines: ranks, backend, communicator, model, optimizer,
 * batch, steps; the optimizer state per rank (sh: this rank's share of
 * it); the data; the metrics "start" event. */
void report_start(const struct config *cfg, struct comm *c, const struct backend *be,
		  const struct model *m, const struct shard *sh, const struct dataset *train,
		  int has_eval, long step, long total_steps, long steps_per_epoch);
/* One progress line at step (of total_steps, in the epoch shown) with the
 * loss since the last one (m's stats, summed over ranks: collective), the
 * rate lr and samples/s; a "train" event; p restarts. */
void report_progress(struct progress *p, struct model *m, struct comm *c, long step,
		     long epoch_shown, long total_steps, float lr);
/* The closing line: rank 0's time per step by phase over steps steps, the
 * steady-state wall time and samples/s of batch rows a step; GFLOP/s of
 * forward and backward at flops_per_row (or n/a when 0: the phase times
 * were not exact). */
void report_timing(const struct timing *t, long steps, double wall, int batch,
		   double flops_per_row);
