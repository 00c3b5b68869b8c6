/* The trainer's state, shared by the training loop (train.c) and its
 * set-up and tear-down (train_setup.c); private to those two files. */
#pragma once

#include "comm.h"
#include "config.h"
#include "dataset.h"
#include "ema.h"
#include "eval.h"
#include "fault.h"
#include "augment.h"
#include "loader.h"
#include "model.h"
#include "optim.h"
#include "report.h"
#include "rows_log.h"
#include "state.h"

struct trainer {
	struct config *cfg;
	struct comm *comm;
	const struct backend *be;
	struct dataset train, eval;   /* streamed: train all rows, eval this
				       * rank's slice */
	int has_eval;
	struct model model;
	struct optim optim;           /* over this rank's shard */
	struct shard shard;           /* the trainable values this rank's
				       * optimizer updates: all of them, or its
				       * ZeRO-1 shard */
	struct ema ema;
	struct state state;           /* what a checkpoint holds */
	struct evaluator evaluator;
	struct loader loader;         /* this rank's rows of each batch */
	struct augment aug;           /* --augment, which the loader applies */
	char *config_text;
	long steps_per_epoch, total_steps;
	struct position at;           /* global step, epoch, batch in epoch */
	long last_ckpt_step;          /* step of the newest checkpoint written */
	double last_ckpt_time;        /* log_now() when it was written, or at
				       * the start (--ckpt-every-min) */
	int ckpt_due;                 /* rank 0's clock says --ckpt-every-min
				       * has passed (agreed, gradients_bad) */
	struct timing t;
	int profile;
	int tracing;                  /* the timeline records this step */
	int lock;                     /* rank 0: --ckpt-dir's lock, or -1 */
	int bad_in_row;               /* steps skipped in a row (NaN/Inf) */
	float *replica_host;          /* (P) --check-replicas scratch, or NULL */
	int stats_apart;              /* the ranks' moving statistics may differ
				       * (local batchnorm statistics, a step
				       * since the last mean_moving_stats) */
	struct test_fault fault;      /* a test's (MTRAIN_TEST_FAULT), or none */
	struct rows_log rows_log;     /* a test's (MTRAIN_TEST_ROWS), or off */
	long skipped;                 /* steps skipped in all */
	int initialized;              /* a fresh run's weights came from --init-from */
	int stop;                     /* the ranks agreed, in the last step,
				       * that one of them got USR1/TERM */
	const char *data_bad;         /* why this rank's batch of this step
				       * could not be read, or NULL */
	int data_failed;              /* some rank's could not (agreed) */
	float *gacc;                  /* --accumulate over 1: the micro-batches'
				       * gradients summed so far (T, backend
				       * memory), else NULL */
	double grad_norm;             /* --clip-norm: this step's global gradient
				       * norm after the reduction, else 0 */
};


/* Everything a run needs before its first step: the backend, the data,
 * the model and its optimizer, EMA and state, the resume, the outputs.
 * 0, or -1 after a user error every rank knows of (nothing written). */
int trainer_setup(struct trainer *t);
/* Frees what trainer_setup made, whatever point it reached. */
void trainer_teardown(struct trainer *t);
