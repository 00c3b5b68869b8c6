/* The default job's data: Fashion-MNIST from Debian's dataset-fashion-mnist
 * package, imported into HDF5 once and cached. */
#pragma once
#include "comm.h"
#include "config.h"

/* Its rows: 28x28 one-channel images (x [N, 28, 28, 1] as imported) of 784
 * values, 10 classes. */
#define DEFAULT_DATA_SIDE 28
#define DEFAULT_DATA_DIM (DEFAULT_DATA_SIDE * DEFAULT_DATA_SIDE)
#define DEFAULT_DATA_CLASSES 10

/* When cfg names no --data: rank 0 imports the IDX files into
 * $MTRAIN_DATA_DIR (default "data") unless cached, and cfg->data (and
 * cfg->eval_data unless set) then name the cached files. Collective. 0, or
 * -1 after a user error. */
int default_data_prepare(struct config *cfg, struct comm *c);
