/* Evaluation: the loss and accuracy of the current weights on an
 * evaluation set sharded across ranks, raw and with the EMA shadows
 * swapped in, during training and as `mtrain eval`. */
#pragma once
#include "comm.h"
#include "dataset.h"
#include "ema.h"
#include "model.h"

struct evaluator {
	const struct dataset *data; /* this rank's slice of the evaluation set */
	float *host_x;              /* (R, D) one batch, R = the model's max_rows */
	int32_t *host_y;            /* (R) */
};

/* Host batches for data, of up to m's max_rows rows. */
void eval_init(struct evaluator *ev, const struct dataset *data, const struct model *m);
/* Rows an evaluation batch of d takes: --eval-batch, at most d's rows held
 * here; for a file of tokens also at most EVAL_TOKENS tokens' worth of
 * windows (a window's activations are T rows'), but never under 1. */
#define EVAL_TOKENS 16384
long eval_rows(const struct dataset *d, int eval_batch);
void eval_free(struct evaluator *ev);
/* out = {mean loss, accuracy, rows evaluated} of m's current weights over
 * every rank's slice (disjoint slices that cover the set: each row read,
 * streamed, and counted once; no padding). The model's training stats are
 * kept. Collective. 0, or -1 on every rank when a rank's rows could not be
 * read (its user_error recorded, not yet printed). */
int eval_run(struct evaluator *ev, struct model *m, struct comm *c, double out[3]);
/* Raw and EMA figures at a training step: e's shadows are broadcast from
 * their owner, swapped in and back; one log line and a metrics event.
 * Collective. 0, or -1 on every rank after the line saying which rows
 * could not be read. */
int eval_report(struct evaluator *ev, struct model *m, struct ema *e, long step,
		 long epoch, struct comm *c);

/* `mtrain eval`: evaluates checkpoint ckpt on eval_data (NULL: the
 * checkpoint's own --eval-data) with raw and/or EMA weights (which: "raw",
 * "ema" or "both") on device. Returns the exit status. */
int eval_main(const char *ckpt, const char *eval_data, const char *which, int device,
	      struct comm *c);
