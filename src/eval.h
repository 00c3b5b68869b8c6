/* Evaluation: the loss and accuracy of the current weights on an
 * evaluation set sharded across ranks, raw and with the EMA shadows
 * swapped in, during training and as `mtrain eval`. */
#pragma once
#include "comm.h"
#include "dataset.h"
#include "ema.h"
#include "model.h"
#include "state.h"

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

/* A checkpoint's model for `mtrain eval` and `mtrain generate`: its
 * configuration, the backend, this rank's slice of the data it is run on,
 * the model laid out for that data's rows with every variable from the
 * file (raw weights in model.w, the EMA's shadows in ema). */
struct ckpt_model {
	struct config cfg;
	int dims[2];           /* the checkpoint's input_dim and classes */
	const struct backend *be;
	struct dataset data;
	struct model model;
	struct ema ema;
	struct state state;
	int open;
};
/* Opens ckpt's model on device (evaluated exactly: fp32) for its data:
 * split DATASET_EVAL of data (NULL: the checkpoint's --eval-data), or
 * DATASET_TRAIN of data (NULL: the checkpoint's --data); allocated for
 * batches of rows rows (0: eval_rows of the data). Collective: 0, or -1
 * with the user error collected and nothing left open. */
int ckpt_model_open(struct ckpt_model *cm, const char *ckpt, const char *data, int split,
		    int device, int rows, struct comm *c);
void ckpt_model_close(struct ckpt_model *cm, struct comm *c);

/* `mtrain eval`: evaluates checkpoint ckpt on eval_data (NULL: the
 * checkpoint's own --eval-data) with raw and/or EMA weights (which: "raw",
 * "ema" or "both") on device. Returns the exit status. */
int eval_main(const char *ckpt, const char *eval_data, const char *which, int device,
	      struct comm *c);
