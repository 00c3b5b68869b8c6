#!/usr/bin/env bash
# The ViT on Fashion-MNIST side by side: jobs/fmnist-vit.conf's recipe cut
# to EPOCHS epochs, trained by mtrain on 2 ranks and by its PyTorch peer
# (bench/vit_torch.py: the same model, initialisers, AdamW, warm-up, cosine
# schedule and augmentation) with 2 threads, one after the other, for each
# seed; prints both test accuracies (raw and EMA) and minutes per seed, their
# means over the seeds, and whether mtrain's mean EMA accuracy is at least
# PyTorch's. The verdict is on the mean: one seed's difference is mostly the
# seed's.
#
# usage: bench/vit_compare.sh [EPOCHS]     (default 10; the build in ./build)
#   The preset warms up over 4685 steps, 5 epochs of 937: cut to 5 epochs
#   or fewer, a run never leaves the warm-up (its rate still rising at the
#   end); 10 gives 5 of warm-up and 5 of the cosine down to lr-min.
# environment: SEEDS (default "42 1 7": the preset's and two more; both
#   trainers take it), PYTHON (the python3 that has torch; default: the
#   first of python3 and /usr/bin/python3 that imports it), STEPS (both cut
#   to that many steps: smoke tests), MTRAIN_DATA_DIR (bench/compare_lib.sh
#   says more).
# Exit status 1 when a run fails, 0 otherwise (the verdict is printed).
set -euo pipefail
EPOCHS=${1:-10}
. "$(dirname "$0")/compare_lib.sh"
compare_run vit_compare ViT jobs/fmnist-vit.conf bench/vit_torch.py
