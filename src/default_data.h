/* The built-in data: the default job's, Fashion-MNIST from Debian's
 * dataset-fashion-mnist package, and the text preset's, the Jargon File from
 * jargon-text, imported into HDF5 once and cached. */
#pragma once
#include "comm.h"
#include "config.h"

/* Its rows: 28x28 one-channel images (x [N, 28, 28, 1] as imported) of 784
 * values, 10 classes. */
#define DEFAULT_DATA_SIDE 28
#define DEFAULT_DATA_DIM (DEFAULT_DATA_SIDE * DEFAULT_DATA_SIDE)
#define DEFAULT_DATA_CLASSES 10

/* When cfg names no --data: rank 0 imports --dataset's files into
 * $MTRAIN_DATA_DIR (default "data") unless cached, and cfg->data (and, for
 * Fashion-MNIST, cfg->eval_data unless set) then name the cached files: the
 * IDX files of Fashion-MNIST as two files of images, or the Jargon File as
 * one file of byte tokens with its validation split (which agree.c
 * evaluates). Collective. 0, or -1 after a user error. */
int default_data_prepare(struct config *cfg, struct comm *c);
