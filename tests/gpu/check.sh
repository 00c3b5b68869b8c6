#!/usr/bin/env bash
# The GPU check, one run on a GPU machine (under 8 minutes): the "cuda"
# tests (a skip counts as a failure here), compute-sanitizer's memcheck on a
# short training run, and a table: step time and samples/s on the GPU
# against the CPU for the default model and a 4096-wide one, the cuBLAS-only
# product rate, and the EMA update's bandwidth against a device-to-device
# copy.
#   tests/gpu/check.sh [BUILD_DIR]
# With .carry.tar.xz in the repository root (made by tests/gpu/pack.sh on a
# Debian 12 machine, for GPU machines without Open MPI, HDF5 or OpenBLAS) it
# unpacks and uses that sm_90 build. Otherwise it builds BUILD_DIR (default
# build-gpu) for sm_90 with warnings as errors. Writes check.log and
# table.md under $OUT when that is set.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-gpu}
LOG=${OUT:-.}/check.log
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec > >(tee "$LOG") 2>&1
start=$SECONDS
say() { printf '\n== %s (%ds)\n' "$*" $((SECONDS - start)); }
fail() { echo "check: FAIL: $*"; exit 1; }

# Directories holding CUDA's own libraries, wherever this machine keeps them
# (the toolkit, or Python's nvidia-* packages).
cuda_lib_dirs() {
	local lib path extra dirs=() roots=(/usr/local /opt)
	while IFS= read -r extra; do roots+=("$extra"); done < <(python3 -c \
		'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null || true)
	for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
		path=$(ldconfig -p 2>/dev/null | awk -v l="$lib" '$1 == l { print $NF; exit }')
		[ -n "$path" ] || path=$(find "${roots[@]}" -name "$lib" 2>/dev/null | head -n 1)
		[ -n "$path" ] && dirs+=("$(dirname "$path")")
	done
	printf '%s\n' "${dirs[@]}" | sort -u | paste -sd:
}

nvidia-smi -L || true
if [ -f .carry.tar.xz ]; then
	say "unpack .carry.tar.xz (prebuilt sm_90, Open MPI, HDF5, OpenBLAS)"
	root=$(mktemp -d)
	tar -xJf .carry.tar.xz -C "$root"
	carry=$root/.carry
	export OPAL_PREFIX=$carry/usr PATH=$carry/usr/bin:$PATH
	export LD_LIBRARY_PATH=$carry/lib:$carry/usr/lib/x86_64-linux-gnu/openmpi/lib:$(cuda_lib_dirs)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	BUILD=$carry/build
	PREBUILT=1
else
	say "build ($BUILD, sm_90)"
	if [ ! -x "$BUILD/mtrain" ]; then
		cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DMTRAIN_WERROR=ON
		cmake --build "$BUILD" -j "$(nproc)"
	fi
	PREBUILT=0
fi
MTRAIN=$BUILD/mtrain
"$BUILD/tests/gpu/gpu_probe" >/dev/null || fail "no GPU visible to CUDA"

say "cuda tests"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ $PREBUILT = 1 ]; then
	# ctest's files name the packing machine's paths: the same three tests by hand.
	status=0
	"$BUILD/tests/gpu/test_backend_ops" || status=$?
	[ $status = 0 ] || fail "test_backend_ops (status $status)"
	mpirun --oversubscribe -np 1 "$BUILD/tests/gpu/nccl_comm" || status=$?
	[ $status = 0 ] || fail "nccl_comm (status $status)"
	MTRAIN_BUILD=$BUILD bash tests/gpu/train.sh || status=$?
	[ $status = 0 ] || fail "train.sh (status $status)"
else
	(cd "$BUILD" && ctest -L cuda --output-on-failure) >"$WORK/ctest.out" 2>&1 || true
	cat "$WORK/ctest.out"
	grep -q "Skipped" "$WORK/ctest.out" && fail "a cuda test skipped on a GPU machine"
	grep -q "100% tests passed" "$WORK/ctest.out" || fail "cuda tests failed"
fi

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
