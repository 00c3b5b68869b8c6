#!/usr/bin/env bash
# ResNet-20 on Fashion-MNIST side by side: jobs/fmnist-resnet.conf's recipe
# cut to EPOCHS epochs, trained by mtrain on 2 ranks and by its PyTorch peer
# (bench/resnet_torch.py: the same model, initialisers, batch norm, recipe
# and augmentation, batch norm per half batch as 2 ranks have it) with 2
# threads, one after the other, for each seed; prints both test accuracies
# (raw and EMA) and minutes per seed, their means over the seeds, and
# whether mtrain's mean EMA accuracy is at least PyTorch's. One seed's
# difference is mostly the seed (about 0.3% either way at 5 epochs): the
# verdict is on the mean.
#
# usage: bench/resnet_compare.sh [EPOCHS]     (default 5; the build in ./build)
# environment: SEEDS (default "42 1 7": the preset's and two more; each
#   about 19 minutes at 5 epochs on 2 cores; both trainers take it),
#   PYTHON (the python3 that has torch; default: the first of python3 and
#   /usr/bin/python3 that imports it), STEPS (both cut to that many steps:
#   smoke tests), MTRAIN_DATA_DIR (bench/compare_lib.sh says more).
# Exit status 1 when a run fails, 0 otherwise (the verdict is printed).
set -euo pipefail
EPOCHS=${1:-5}
. "$(dirname "$0")/compare_lib.sh"
compare_run resnet_compare ResNet-20 jobs/fmnist-resnet.conf bench/resnet_torch.py --ranks 2
