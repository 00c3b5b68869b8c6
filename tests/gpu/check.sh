#!/usr/bin/env bash
# The GPU check, one run on a GPU machine (under 8 minutes): the "cuda"
# tests (a skip counts as a failure here), compute-sanitizer's memcheck on a
# short training run, and a table: step time and samples/s on the GPU
# against the CPU for the default model, a 4096-wide one and the CNN of
# jobs/fmnist-cnn.conf, the cuBLAS-only product rate, and the EMA update's
# bandwidth against a device-to-device copy.
#   tests/gpu/check.sh [BUILD_DIR]
# With .carry.tar.xz in the repository root (made by tests/gpu/pack.sh on a
# Debian 12 machine, for GPU machines without Open MPI, HDF5 or OpenBLAS) it
# unpacks and uses that sm_90 build, after checking it was made from this
# tree's source. Otherwise it builds BUILD_DIR (default build-gpu) for sm_90
# with warnings as errors.
#
# A device run is scarce, so one failing stage does not stop the others:
# each stage runs under its own time limit, cut to what is left of the
# whole budget (CHECK_BUDGET seconds, default 450), and the check ends with
# one PASS/FAIL line per stage; it exits 1 if any failed. Writes check.log
# and table.md under $OUT when that is set.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=$(realpath -m "${1:-build-gpu}")
LOG=${OUT:-.}/check.log
BUDGET=${CHECK_BUDGET:-450}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# NCCL says why when it fails (and which version it is).
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
exec > >(tee "$LOG") 2>&1
tee_pid=$!
start=$SECONDS
results=()
say() { printf '\n== %s (%ds)\n' "$*" $((SECONDS - start)); }

# stage NAME LIMIT CMD...: runs CMD under min(LIMIT, what is left of the
# budget) seconds and records PASS or FAIL; returns CMD's status.
stage() {
	local name=$1 limit=$2 status=0
	shift 2
	local left=$((BUDGET - (SECONDS - start)))
	((limit > left)) && limit=$left
	if ((limit < 5)); then
		results+=("FAIL $name: the budget of ${BUDGET}s ran out before it")
		return 1
	fi
	say "$name (at most ${limit}s)"
	timeout -k 5 "$limit" "$@" || status=$?
	if [ $status = 0 ]; then
		results+=("PASS $name")
	elif [ $status = 124 ] || [ $status = 137 ]; then
		results+=("FAIL $name: stopped after ${limit}s")
	else
		results+=("FAIL $name: exit status $status")
	fi
	return $status
}

finish() {
	local status=0
	say "summary"
	printf '%s\n' "${results[@]}"
	for r in "${results[@]}"; do
		[[ $r == PASS* ]] || status=1
	done
	[ $status = 0 ] && echo "check: all ${#results[@]} stages passed" || echo "check: FAILED"
	# The log is whole only once tee has drained.
	exec >&- 2>&-
	wait $tee_pid
	exit $status
}

# Directories holding CUDA's own libraries, wherever this machine keeps them
# (the toolkit, or Python's nvidia-* packages).
cuda_lib_dirs() {
	local lib path extra dirs=() roots=(/usr/local /opt)
	while IFS= read -r extra; do roots+=("$extra"); done < <(python3 -c \
		'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null || true)
	for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
		path=$(ldconfig -p 2>/dev/null | awk -v l="$lib" '$1 == l { print $NF; exit }')
		[ -n "$path" ] || path=$(find "${roots[@]}" -name "$lib" -print -quit 2>/dev/null)
		[ -n "$path" ] && dirs+=("$(dirname "$path")")
	done
	printf '%s\n' "${dirs[@]}" | sort -u | paste -sd:
}

say "machine"
nvidia-smi -L || true
nvidia-smi --query-gpu=driver_version,compute_mode --format=csv || true
ldd --version 2>&1 | head -n 1
if ! command -v compute-sanitizer >/dev/null; then
	sanitizer=$(find /usr/local /opt -name compute-sanitizer -type f -perm -u+x -print -quit 2>/dev/null)
	[ -n "$sanitizer" ] && PATH=$PATH:$(dirname "$sanitizer")
fi
if [ -f .carry.tar.xz ]; then
	say "unpack .carry.tar.xz (prebuilt sm_90, Open MPI, HDF5, OpenBLAS)"
	root=$(mktemp -d)
	tar -xJf .carry.tar.xz -C "$root" || { results+=("FAIL unpack .carry.tar.xz"); finish; }
	carry=$root/.carry
	export OPAL_PREFIX=$carry/usr PATH=$carry/usr/bin:$PATH
	export LD_LIBRARY_PATH=$carry/lib:$carry/usr/lib/x86_64-linux-gnu/openmpi/lib:$(cuda_lib_dirs)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	BUILD=$carry/build
	# Debian's Open MPI settings (/etc/openmpi) stay behind: the same here.
	export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_mtl=^ofi OMPI_MCA_osc=^ucx
	export OMPI_MCA_btl_vader_single_copy_mechanism=none
	packed=$(cat "$carry/SOURCE" 2>/dev/null || echo none)
	here=$(tests/gpu/source_hash.sh)
	# Results of other code would describe nothing: stop here.
	stage "the packed build is of this source ($packed = $here)" 5 test "$packed" = "$here" ||
		finish
elif [ ! -x "$BUILD/mtrain" ]; then
	stage "build $BUILD for sm_90" 300 bash -c "cmake -S . -B '$BUILD' -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_CUDA_ARCHITECTURES=90 -DMTRAIN_WERROR=ON && cmake --build '$BUILD' -j $(nproc)" ||
		finish
fi
MTRAIN=$BUILD/mtrain
echo "libraries mtrain loads:"
ldd "$MTRAIN" | grep -E 'cuda|cublas|nccl|mpi|hdf5|blas|not found' || true
stage "a GPU is visible to CUDA" 60 "$BUILD/tests/gpu/gpu_probe" || finish

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The cuda tests by hand, as ctest would run them (ctest's files name
# the build machine's paths when the build was packed elsewhere).
stage "cuda.backend_ops" 120 "$BUILD/tests/gpu/test_backend_ops"
stage "cuda.backend_seq" 60 "$BUILD/tests/gpu/test_backend_seq"
stage "cuda.nccl_comm" 90 mpirun --oversubscribe -np 1 "$BUILD/tests/gpu/nccl_comm"
# One rank leaves NCCL nothing to move. Two ranks on one GPU that NCCL takes
# for two hosts (NCCL_HOSTID) make it sum over sockets for real.
stage "nccl_comm, 2 ranks on one GPU as two hosts" 90 mpirun --oversubscribe -np 2 \
	sh tests/gpu/host_per_rank.sh "$BUILD/tests/gpu/nccl_comm"
stage "cuda.train" 240 env MTRAIN_BUILD="$BUILD" bash tests/gpu/train.sh

if [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
	MTRAIN_DATA_DIR=$WORK "$MTRAIN" --device cpu --steps 1 --ckpt-dir "$WORK/ck0" >/dev/null
	DATA=$WORK/fashion-mnist-train.h5
else
	# Same shape as Fashion-MNIST: 60,000 x 784 uint8, 10 classes.
	"$BUILD/tests/mkdata" synth "$WORK/train.h5" 60000 784 10 1 u8
	DATA=$WORK/train.h5
fi

# API errors that NCCL and MPI make and handle themselves are not ours.
stage "compute-sanitizer memcheck, 20 steps" 150 compute-sanitizer --tool memcheck \
	--report-api-errors no --target-processes application-only --error-exitcode 9 \
	"$MTRAIN" --device cuda --data "$DATA" --eval-data none --steps 20 --comm-timeout 60 \
	--ckpt-dir "$WORK/san" --log-every 10

# speed NAME ARGS...: one training run; its "ms/step samples/s" (from the
# timing line) land in $WORK/NAME.speed.
speed() {
	local name=$1
	shift
	"$MTRAIN" --data "$DATA" --eval-data none --log-every 1000000 --resume never --comm-timeout 30 \
		--ckpt-dir "$WORK/$name" "$@" >"$WORK/$name.log" || { cat "$WORK/$name.log"; return 1; }
	awk '/^timing/ { for (i = 1; i < NF; i++) { if ($i == "total") t = $(i+1); if ($i == "samples/s") s = $(i+1) }
		print t, s }' "$WORK/$name.log" >"$WORK/$name.speed"
	grep -h '^timing' "$WORK/$name.log"
	[ -s "$WORK/$name.speed" ] || { echo "no timing line in $name's log"; return 1; }
}
export -f speed
export MTRAIN DATA WORK
stage "speed: GPU, default model" 60 bash -c 'speed gpu_default --device cuda --steps 3000'
stage "speed: CPU, default model" 60 bash -c 'speed cpu_default --device cpu --steps 300'
stage "speed: GPU, 4096-wide fp32" 60 bash -c 'speed gpu_large --device cuda --layers 4096,4096 --steps 300'
stage "speed: GPU, 4096-wide bf16" 60 bash -c \
	'speed gpu_large_bf16 --device cuda --precision bf16 --layers 4096,4096 --steps 300'
stage "speed: CPU, 4096-wide" 90 bash -c 'speed cpu_large --device cpu --layers 4096,4096 --steps 60'
CNN="--input-shape 28,28,1 --model conv2d:32:3,batchnorm,relu,maxpool2d:2,conv2d:64:3,batchnorm,relu,maxpool2d:2,flatten,dense:128,relu,dropout:0.3,dense"
stage "speed: GPU, CNN (jobs/fmnist-cnn.conf)" 60 bash -c "speed gpu_cnn --device cuda $CNN --steps 500"
stage "speed: CPU, CNN (jobs/fmnist-cnn.conf)" 60 bash -c "speed cpu_cnn --device cpu $CNN --steps 30"
stage "gpu_bench: cuBLAS alone, EMA vs copy" 90 bash -c \
	"set -o pipefail; '$BUILD/tests/gpu/gpu_bench' | tee '$WORK/bench'"

ms() { cut -d' ' -f1 "$WORK/$1.speed" 2>/dev/null || echo "n/a"; }
sps() { cut -d' ' -f2 "$WORK/$1.speed" 2>/dev/null || echo "n/a"; }
ratio() { awk -v a="$(sps "$1")" -v b="$(sps "$2")" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.1fx", a / b; else print "n/a" }'; }
{
	echo
	echo "| model (batch 128, 1 rank) | GPU ms/step | GPU samples/s | CPU ms/step | CPU samples/s | GPU/CPU |"
	echo "| --- | --- | --- | --- | --- | --- |"
	echo "| 784-256-256-10 fp32 | $(ms gpu_default) | $(sps gpu_default) | $(ms cpu_default) | $(sps cpu_default) | $(ratio gpu_default cpu_default) |"
	echo "| 784-4096-4096-10 fp32 | $(ms gpu_large) | $(sps gpu_large) | $(ms cpu_large) | $(sps cpu_large) | $(ratio gpu_large cpu_large) |"
	echo "| 784-4096-4096-10 bf16 | $(ms gpu_large_bf16) | $(sps gpu_large_bf16) | $(ms cpu_large) | $(sps cpu_large) | $(ratio gpu_large_bf16 cpu_large) |"
	echo "| CNN of jobs/fmnist-cnn.conf fp32 | $(ms gpu_cnn) | $(sps gpu_cnn) | $(ms cpu_cnn) | $(sps cpu_cnn) | $(ratio gpu_cnn cpu_cnn) |"
	awk '/^cublas/ { printf "| cuBLAS alone, %s %sx%sx%s | %s TFLOP/s |\n", $2, $4, $4, $4, $6 }
	     /^ema/ { printf "| EMA update | %s GB/s | copy %s GB/s | EMA/copy %s |\n", $3, $6, $8 }' \
		"$WORK/bench" 2>/dev/null
} | tee "${OUT:-.}/table.md"
finish
