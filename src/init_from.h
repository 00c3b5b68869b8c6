/* --init-from: a new run's weights from a file written by mtrain or by
 * others, each variable taking the value stored under its canonical name
 * (in Keras' files, its layer's "<layer>/vars/<i>"). Nothing is skipped
 * silently: a variable the file lacks, or holds in another shape, stops
 * the run unless --init-skip names it; the file's names the model does not
 * have are listed in one warning line. */
#pragma once
#include "config.h"
#include "model.h"

/* Rank 0: reads cfg->init_from and writes every variable of m it holds
 * over host_w (P values in the registry's layout, holding the fresh
 * initial values that --init-skip's variables keep); one line says what it
 * took. 0, or RC_USER/RC_CORRUPT with a user_error naming the file and
 * the variable. */
int init_from_read(const struct config *cfg, const struct model *m, float *host_w);
