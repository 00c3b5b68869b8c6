/* The state a checkpoint holds: every variable, its EMA shadow and its
 * optimizer slots under canonical names, with the position in the data.
 * Saving it (rank 0 writes), loading it (rank 0 reads, every rank
 * receives) and the resume policy (which file, and whether it fits this
 * run) are here; the file format is io/ckpt's. */
#pragma once
#include "backend.h"
#include "ckpt.h"
#include "comm.h"
#include "config.h"
#include "optim.h"
#include "order.h"
#include "params.h"

/* Where training stands: global_step updates done; the next step is in
 * epoch (0-based) at global batch pos of it. */
struct position {
	long global_step; /* e.g. 2340 */
	long epoch;       /* e.g. 5 */
	long pos;         /* global batches of the epoch done, e.g. 0 */
	int order;        /* enum order_kind of the run: ORDER_FEISTEL when
			   * fresh, else what its checkpoint says */
	int resumed;      /* 1: from a checkpoint; 0: a fresh start */
};

#define STATE_KINDS 4 /* variables, shadows, two optimizer slots */

struct state {
	const struct backend *be;
	float **live[STATE_KINDS]; /* where each kind's backend buffer is kept
				    * (ema_swap moves them): w, shadow, slots */
	float *host[STATE_KINDS];  /* (n[k]) each, rank 0's staging, else NULL */
	int kinds;                 /* 2 + optimizer slots, e.g. 4 for Adam */
	size_t n[STATE_KINDS];     /* values of each: P for w, T for the others
				    * (trainable variables only: params.h) */
	struct shard slots;        /* how the optimizer's slots are split over
				    * the ranks (ZeRO-1; ranks 1: whole) */
	struct ckpt_var *vars;     /* (kinds * variables) into host */
	int n_vars;
};

/* Describes reg's variables (their buffer kept at *w), the shadows
 * (*shadow) and the slots of o (NULL: none, as for evaluation) of the
 * trainable ones, by their canonical names, with host staging when
 * host_staging (rank 0). slots: o's split over the ranks, each rank's slot
 * buffers holding its shard (NULL: whole on every rank). */
void state_init(struct state *s, const struct backend *be, const struct params *reg,
		float **w, float **shadow, const struct optim *o, const struct shard *slots,
		int host_staging);
void state_free(struct state *s);
/* Rank 0 writes the state and meta (created and version are filled here;
 * the slots' shards gathered from every rank) to dir as one checkpoint, logs it, and prunes dir to the newest keep.
 * Collective: 0, or -1 on every rank when the write failed. */
int state_save(struct state *s, struct ckpt_meta *meta, const char *dir, int keep,
	       struct comm *c);
/* Rank 0: reads path into the staging (ckpt_read's rules and return
 * values; allow_extra: variables the state does not hold are ignored). */
int state_read(struct state *s, const char *path, int allow_extra, struct ckpt_meta *meta);
/* Every rank's buffers = rank 0's staging (each its shard of the slots).
 * Collective. */
void state_send(struct state *s, struct comm *c);

/* What a checkpoint must match to continue this run. */
struct resume_run {
	const struct config *cfg;
	const char *config_text; /* config_to_text(cfg) */
	long train_rows;         /* rows of --data */
	long steps_per_epoch;    /* e.g. 468 */
};
/* --resume: rank 0 picks the checkpoint (auto: the newest that opens and
 * passes its checksums), checks it fits run (batch, seed, rows, position
 * and an order this mtrain knows must; a file before format 3 has the
 * stored order, ORDER_LEGACY; other hyper-parameters that differ are named in a
 * warning) and every rank receives its state; *at is its position, or
 * zero for a fresh start. Collective: 0, or -1 after a user error. */
int state_resume(struct state *s, const struct resume_run *run, struct position *at,
		 struct comm *c);
