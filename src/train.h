/* The training loop, written once against the backend and communicator
 * interfaces. */
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
/* hold 1: those signals wait, blocked (across an exec too, where no handler
 * would catch them); hold 0: the waiting ones reach the handler. */
void train_hold_stop_signals(int hold);
