#!/usr/bin/env bash
# The test command: installs what is missing, builds with warnings as errors,
# and runs the whole CTest suite: unit, multi-rank (mpirun), Slurm (a real
# one, started by the test), and the CUDA tests, which skip without a GPU.
# Extra arguments go to ctest, e.g. tests/run.sh -L unit.
set -euo pipefail
cd "$(dirname "$0")/.."
MTRAIN_WERROR=ON jobs/setup.sh --tests
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd build
ctest --output-on-failure --timeout 300 "$@"
