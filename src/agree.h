/* Start-up agreement: every rank must run the same job on the same data
 * with the same model, or ranks would take other branches and wait in
 * different collectives. Each check is collective and names the first
 * difference in one user-error line. */
#pragma once
#include "comm.h"
#include "config.h"
#include "dataset.h"
#include "backend.h"
#include "params.h"

/* Every rank's options equal rank 0's (the model's shape aside: that is
 * agree_registry's, which names the variable). 0 or -1. */
int agree_config(const struct config *cfg, struct comm *c);
/* Every rank's training set (rows, shape, classes, file size and a digest
 * of a seeded sample of rows, or of every row with --verify-data:
 * dataset_digest) and evaluation file (rows, width; eval may be NULL for
 * none) equal rank 0's. Records a user error on a differing rank, or one
 * whose rows could not be read; the caller collects it. */
void agree_data(const struct config *cfg, const struct dataset *train,
		const struct dataset *eval, struct comm *c);
/* Opens the data of cfg on every rank for streaming (the whole training
 * set; this rank's slice of the evaluation set, when there is one:
 * *has_eval) and checks it: the training set's sampled rows, evaluation
 * width against training's (its labels are checked against the training
 * set's classes as they are read), every rank's data equal to rank 0's
 * (agree_data), the batch against the rows and ranks. A file of tokens
 * (rows: windows of --context) without --eval-data is evaluated on its
 * validation split, where it has one: cfg->eval_data is set to it (else to
 * "none"). Collective: 0, or -1 after a user error. */
int agree_load_data(struct config *cfg, struct comm *c, struct dataset *train,
		    struct dataset *eval, int *has_eval);
/* --check-replicas: every rank's copy of buf (backend memory laid out by
 * reg: the weights, or the EMA shadows right after a sync) is bitwise rank
 * 0's, variable by variable (FNV-1a digests, all-gathered); host is
 * reg->total floats of scratch; what names buf ("weights"). Collective: 0,
 * or -1 after rank 0 printed the first rank and variable that differ. */
int agree_replicas(const struct backend *be, const float *buf, const struct params *reg,
		   float *host, const char *what, long step, struct comm *c);
/* Every rank's registry has rank 0's names and shapes in rank 0's order.
 * 0 or -1. */
int agree_registry(const struct params *mine, struct comm *c);
