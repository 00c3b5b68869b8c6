#!/usr/bin/env bash
# Runs mtrain on this machine: NP ranks (default 2) through mpirun, the rest of
# the arguments passed to mtrain. Example: NP=4 jobs/local.sh --epochs 10
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/mtrain ] || jobs/setup.sh
args=(-np "${NP:-2}")
[ "$(id -u)" = 0 ] && args+=(--allow-run-as-root)
[ "${NP:-2}" -gt "$(nproc)" ] && args+=(--oversubscribe)
exec mpirun "${args[@]}" build/mtrain "$@"
