#!/usr/bin/env bash
# The GPU check, one run on a GPU machine (under 8 minutes): builds for sm_90
# with warnings as errors, runs the "cuda" tests (a skip counts as a
# failure here), runs compute-sanitizer's memcheck on a short training run,
# and prints a table: step time and samples/s on the GPU against the CPU for
# the default model and a 4096-wide one, the cuBLAS-only product rate, and
# the EMA update's bandwidth against a device-to-device copy.
#   tests/gpu/check.sh [BUILD_DIR]     (default build-gpu; built if absent)
# Writes check.log (and the table) under $OUT when that is set.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-gpu}
LOG=${OUT:-.}/check.log
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec > >(tee "$LOG") 2>&1
start=$SECONDS
say() { printf '\n== %s (%ds)\n' "$*" $((SECONDS - start)); }
fail() { echo "check: FAIL: $*"; exit 1; }

say "build ($BUILD, sm_90)"
nvidia-smi -L || true
if [ ! -x "$BUILD/mtrain" ]; then
	cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DMTRAIN_WERROR=ON
	cmake --build "$BUILD" -j "$(nproc)"
fi
MTRAIN=$BUILD/mtrain
"$BUILD/tests/gpu/gpu_probe" >/dev/null || fail "no GPU visible to CUDA"

say "cuda tests"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
(cd "$BUILD" && ctest -L cuda --output-on-failure) >"$WORK/ctest.out" 2>&1 || true
cat "$WORK/ctest.out"
grep -q "Skipped" "$WORK/ctest.out" && fail "a cuda test skipped on a GPU machine"
grep -q "100% tests passed" "$WORK/ctest.out" || fail "cuda tests failed"

if [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
	MTRAIN_DATA_DIR=$WORK "$MTRAIN" --steps 1 --ckpt-dir "$WORK/ck0" >/dev/null
	DATA=$WORK/fashion-mnist-train.h5
else
	# Same shape as Fashion-MNIST: 60,000 x 784 uint8, 10 classes.
	"$BUILD/tests/mkdata" synth "$WORK/train.h5" 60000 784 10 1 u8
	DATA=$WORK/train.h5
fi

say "compute-sanitizer memcheck, 20 steps"
# API errors that NCCL and MPI make and handle themselves are not ours.
compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 "$MTRAIN" --device cuda --data "$DATA" \
	--eval-data none --steps 20 --ckpt-dir "$WORK/san" --log-every 10 || fail "memcheck"

# run NAME ARGS...: one training run; prints "ms/step samples/s" from its timing line.
run() {
	local name=$1
	shift
	"$MTRAIN" --data "$DATA" --eval-data none --log-every 1000000 --resume never \
		--ckpt-dir "$WORK/$name" "$@" >"$WORK/$name.log" || { cat "$WORK/$name.log" >&2; return 1; }
	awk '/^timing/ { for (i = 1; i < NF; i++) { if ($i == "total") t = $(i+1); if ($i == "samples/s") s = $(i+1) }
		print t, s }' "$WORK/$name.log"
}

say "speed"
read -r g_ms g_sps < <(run gpu_default --device cuda --steps 3000) || true
read -r c_ms c_sps < <(run cpu_default --device cpu --steps 300) || true
read -r gl_ms gl_sps < <(run gpu_large --device cuda --layers 4096,4096 --steps 300) || true
read -r gb_ms gb_sps < <(run gpu_large_bf16 --device cuda --precision bf16 --layers 4096,4096 --steps 300) || true
read -r cl_ms cl_sps < <(run cpu_large --device cpu --layers 4096,4096 --steps 60) || true
for v in "$g_ms" "$c_ms" "$gl_ms" "$gb_ms" "$cl_ms"; do
	[ -n "$v" ] || fail "a speed run failed or printed no timing line (logs in $WORK)"
done
"$BUILD/tests/gpu/gpu_bench" >"$WORK/bench" || fail "gpu_bench"
cat "$WORK/bench"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fx", a / b }'; }
{
	echo
	echo "| model (batch 128, 1 rank) | GPU ms/step | GPU samples/s | CPU ms/step | CPU samples/s | GPU/CPU |"
	echo "| --- | --- | --- | --- | --- | --- |"
	echo "| 784-256-256-10 fp32 | $g_ms | $g_sps | $c_ms | $c_sps | $(ratio "$g_sps" "$c_sps") |"
	echo "| 784-4096-4096-10 fp32 | $gl_ms | $gl_sps | $cl_ms | $cl_sps | $(ratio "$gl_sps" "$cl_sps") |"
	echo "| 784-4096-4096-10 bf16 | $gb_ms | $gb_sps | $cl_ms | $cl_sps | $(ratio "$gb_sps" "$cl_sps") |"
	awk '/^cublas/ { printf "| cuBLAS alone, %s %sx%sx%s | %s TFLOP/s |\n", $2, $4, $4, $4, $6 }
	     /^ema/ { printf "| EMA update | %s GB/s | copy %s GB/s | EMA/copy %s |\n", $3, $6, $8 }' "$WORK/bench"
} | tee "${OUT:-.}/table.md"
say "done"
