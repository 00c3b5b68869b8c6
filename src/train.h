/* The training loop and evaluation, written once against the backend and
 * communicator interfaces. */
#pragma once
#include "comm.h"
#include "config.h"

/* Runs the job cfg describes on every rank of c: set-up and validation,
 * optional resume, training with EMA, evaluation and checkpoints. Returns the
 * process exit status: 0, EXIT_USER for bad input, 1 for a failed write. */
int train_main(struct config *cfg, struct comm *c);
/* From now on SIGUSR1 and SIGTERM ask train_main to checkpoint and stop at
 * a step every rank agrees on. Called first thing in main for training, so
 * a signal during start-up is not lost (it stops after the first step). */
void train_catch_stop_signals(void);

/* `mtrain eval`: evaluates checkpoint ckpt on eval_data (NULL: the
 * checkpoint's own --eval-data) with raw and/or EMA weights (which: "raw",
 * "ema" or "both"). Returns the exit status. */
int eval_main(const char *ckpt, const char *eval_data, const char *which,
	      int device, struct comm *c);

/* The default data files (Fashion-MNIST cached as HDF5, imported from the
 * Debian package on first use) when cfg names none. Collective. 0 or -1. */
int train_default_data(struct config *cfg, struct comm *c);
