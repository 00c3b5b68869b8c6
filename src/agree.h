/* Start-up agreement: every rank must run the same job on the same data
 * with the same model, or ranks would take other branches and wait in
 * different collectives. Each check is collective and names the first
 * difference in one user-error line. */
#pragma once
#include "comm.h"
#include "config.h"
#include "dataset.h"
#include "params.h"

/* Every rank's options equal rank 0's (the model's shape aside: that is
 * agree_registry's, which names the variable). 0 or -1. */
int agree_config(const struct config *cfg, struct comm *c);
/* Every rank's training set (rows, classes, FNV-1a of all of it) and
 * evaluation file (rows, width; eval may be NULL for none) equal rank 0's.
 * Records a user error on a differing rank; the caller collects it. */
void agree_data(const struct config *cfg, const struct dataset *train,
		const struct dataset *eval, struct comm *c);
/* Every rank's registry has rank 0's names and shapes in rank 0's order.
 * 0 or -1. */
int agree_registry(const struct params *mine, struct comm *c);
