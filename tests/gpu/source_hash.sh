#!/usr/bin/env bash
# Prints a short hash of everything compiled into the programs (C, CUDA,
# headers, CMake files), so that tests/gpu/check.sh can tell whether a
# build packed by tests/gpu/pack.sh was made from the tree it runs in.
set -euo pipefail
cd "$(dirname "$0")/../.."
find CMakeLists.txt src mpi cuda io tests -type f \
	\( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name CMakeLists.txt \) -print0 |
	LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
