#!/usr/bin/env bash
# The test command: installs what is missing, builds with warnings as errors,
# and runs the whole CTest suite: unit, multi-rank (mpirun), Slurm (a real
# one, started by the test), and the CUDA tests, which skip without a GPU.
# A test that cannot run here for want of what this command installs skips,
# saying why; MTRAIN_NO_SKIP=1 (CI: .ci/run) makes that a failure.
# Extra arguments go to ctest, e.g. tests/run.sh -L unit.
#
# MTRAIN_SANITIZE=ON tests/run.sh -L '^(unit|mpi|io|cli|e2e|reliability|keras)$' runs them on
# the ASan + UBSan build (./build-asan, CPU only) instead: any finding fails
# its test. docs/tests.md lists the labels.
set -euo pipefail
cd "$(dirname "$0")/.."
MTRAIN_WERROR=ON jobs/setup.sh --tests
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
build=build
if [ "${MTRAIN_SANITIZE:-OFF}" = ON ]; then
	build=build-asan
	# Open MPI, HDF5 and OpenBLAS keep some allocations until exit: those
	# leaks are theirs (tests/sanitize.supp); mtrain's are reported. Full
	# unwinding, so a stack through a plug-in Open MPI has unloaded still
	# shows the library that called it. No TLS scan: LSan's tracer crashes
	# on the dynamic TLS of a single-process (singleton) MPI job.
	export ASAN_OPTIONS=detect_leaks=1:exitcode=99:fast_unwind_on_malloc=0
	export LSAN_OPTIONS=suppressions=$PWD/tests/sanitize.supp:print_suppressions=0:use_tls=0
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
cd "$build"
ctest --output-on-failure --timeout 300 "$@"
