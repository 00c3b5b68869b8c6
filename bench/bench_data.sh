#!/usr/bin/env bash
# The data path's speed, side by side with the previous release: this
# build's streamed reader (rows read from the file by a reader thread, read
# ahead, checked, augmented) against the in-memory loader of BENCH_BASELINE,
# a commit of this repository that the script builds (CPU only) in a
# scratch folder. On 2 ranks, interleaved runs of
#   mlp: the default job (Fashion-MNIST, MLP 784-256-256-10, batch 128),
#   cnn: jobs/fmnist-cnn.conf's CNN with --augment crop:4,flip,
# each from a warm page cache; for each, the median samples/s of both
# builds and their ratio (and for mlp, the file chunked and compressed as
# h5repack makes it, where hdf5-tools is installed), and this build's data phase (staging the batch,
# including any wait for the reader) and its wait for the reader alone, as
# shares of the step. Then this build cold (the training file's page cache
# dropped with posix_fadvise before the run), and the reader alone
# (bench/bench_reader: rows/s with nothing else running, warm and cold; the
# default job's file mapped, as a file of at most 256 MiB is read, and with
# one pread a row, as a larger one is).
# bench/bench.sh runs this as its "data" part (BENCH_MODELS); it runs alone
# too.
#
# usage: bench/bench_data.sh [BUILD_DIR]     (default ./build: mtrain, bench/bench_reader)
# environment: BENCH_BASELINE (default 2f85fc0: the last commit with the
#   in-memory loader), BENCH_DATA_REPEATS (default 5), BENCH_STEPS (MLP steps
#   a run, default 1404), BENCH_CNN_STEPS (default 200), MTRAIN_DATA_DIR.
# About 4 minutes on 2 cores, the baseline's build included. Exit status 1
# when a run fails or prints no timing line.
set -euo pipefail

BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MTRAIN=$BUILD/mtrain
READER=$BUILD/bench/bench_reader
REF=${BENCH_BASELINE:-2f85fc0}
REPEATS=${BENCH_DATA_REPEATS:-5}
STEPS=${BENCH_STEPS:-1404}
CNN_STEPS=${BENCH_CNN_STEPS:-200}
MPIRUN=${MPIRUN:-mpirun}
DATA_DIR=${MTRAIN_DATA_DIR:-data}
TRAIN=$DATA_DIR/fashion-mnist-train.h5
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MTRAIN_DATA_DIR=$DATA_DIR

fail() { echo "bench_data: FAIL: $*" >&2; exit 1; }
for p in "$MTRAIN" "$READER"; do
	[ -x "$p" ] || fail "$p missing: build first (cmake -S . -B $BUILD && cmake --build $BUILD)"
done
WORK=$(mktemp -d /tmp/mtrain-bench-data.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

echo "== Data: this build's streamed reader against the in-memory loader of $REF (built now, CPU only)"
git -C "$ROOT" cat-file -e "$REF^{commit}" 2>/dev/null || fail "BENCH_BASELINE=$REF is not a commit of $ROOT"
mkdir "$WORK/base-src"
git -C "$ROOT" archive "$REF" | tar -x -C "$WORK/base-src"
(cmake -S "$WORK/base-src" -B "$WORK/base" -DCMAKE_BUILD_TYPE=Release -DMTRAIN_CUDA=OFF &&
	cmake --build "$WORK/base" -j"$(nproc)" --target mtrain) >"$WORK/base-build.log" 2>&1 ||
	{ tail -20 "$WORK/base-build.log" >&2; fail "cannot build $REF"; }
BASE=$WORK/base/mtrain

MLP_ARGS=(--steps "$STEPS")
CNN_ARGS=(--config "$ROOT/jobs/fmnist-cnn.conf" --augment crop:4,flip --steps "$CNN_STEPS")

# run BINARY TAG ARGS...: 2 ranks, steady-state timing appended to
# $WORK/TAG as "samples/s data total data_wait" (data_wait 0 where the
# binary has none: the baseline).
RUN=0
run() {
	local bin=$1 tag=$2 log=$WORK/run-$((++RUN)).log rc=0
	shift 2
	timeout 600 "$MPIRUN" -np 2 "$bin" --device cpu --eval-data none --log-every 1000000 \
		--resume never --ckpt-dir "$WORK/ck-$RUN" "$@" >"$log" 2>&1 || rc=$?
	[ $rc = 0 ] || { tail -20 "$log" >&2; fail "$bin $* exited with status $rc"; }
	awk '$1 == "timing" && $2 == "ms/step" {
		for (i = 3; i < NF; i += 2) v[$i] = $(i + 1)
		print v["samples/s"], v["data"], v["total"], (v["data_wait"] == "" ? 0 : v["data_wait"]) }' \
		"$log" >>"$WORK/$tag"
	[ -s "$WORK/$tag" ] || { cat "$log" >&2; fail "$bin: no timing line"; }
	rm -rf "$WORK/ck-$RUN"
}
median() { sort -g -k"$2","$2" "$1" | awk -v c="$2" '{v[NR] = $c} END {print v[int((NR + 1) / 2)]}'; }

# Warm: the data imported, its page cache and both programs loaded.
run "$MTRAIN" warm --steps 20
run "$BASE" warm --steps 20
for ((r = 1; r <= REPEATS; r++)); do
	run "$MTRAIN" mlp-new "${MLP_ARGS[@]}"
	run "$BASE" mlp-base "${MLP_ARGS[@]}"
	run "$MTRAIN" cnn-new "${CNN_ARGS[@]}"
	run "$BASE" cnn-base "${CNN_ARGS[@]}"
done
# The same file chunked (1024 rows) and compressed (deflate 1), as mtrain
# import wrote it before, read through HDF5; where h5repack is installed.
GZ=
if command -v h5repack >/dev/null; then
	GZ=$WORK/train-gz.h5
	h5repack -l x:CHUNK=1024x28x28x1 -l y:CHUNK=1024 -f GZIP=1 "$TRAIN" "$GZ" ||
		fail "h5repack of $TRAIN failed"
	for ((r = 1; r <= REPEATS; r++)); do
		run "$MTRAIN" mlp-gz "${MLP_ARGS[@]}" --data "$GZ"
	done
fi
"$READER" --drop "$TRAIN" || fail "cannot drop the page cache of $TRAIN"
run "$MTRAIN" mlp-cold "${MLP_ARGS[@]}"
"$READER" --drop "$TRAIN" || fail "cannot drop the page cache of $TRAIN"
run "$MTRAIN" cnn-cold "${CNN_ARGS[@]}"

echo "2 ranks, median of $REPEATS interleaved runs each, steady state; data = staging the step's batch"
echo "(this build: taking it from the reader and handing it to the model), wait = blocked on the reader"
printf '%-4s %-22s %10s %9s %7s %9s %7s\n' model loader samples/s "data ms" "data %" "wait ms" "wait %"
for m in mlp cnn; do
	for kind in new base cold gz; do
		f=$WORK/$m-$kind
		[ -s "$f" ] || continue
		name="streamed (this build)"
		[ $kind = base ] && name="in-memory ($REF)"
		[ $kind = cold ] && name="streamed, cold cache"
		[ $kind = gz ] && name="streamed, chunked+gzip"
		row=$(sort -g -k1,1 "$f" | awk '{r[NR] = $0} END {print r[int((NR + 1) / 2)]}')
		read -r sps data total wait <<<"$row"
		awk -v m=$m -v n="$name" -v s="$sps" -v d="$data" -v t="$total" -v w="$wait" -v k=$kind 'BEGIN {
			if (k == "base") printf "%-4s %-22s %10.0f %9.3f %7.2f %9s %7s\n", m, n, s, d, 100 * d / t, "-", "-"
			else printf "%-4s %-22s %10.0f %9.3f %7.2f %9.3f %7.2f\n", m, n, s, d, 100 * d / t, w, 100 * w / t }'
	done
	awk -v m=$m -v a="$(median "$WORK/$m-new" 1)" -v b="$(median "$WORK/$m-base" 1)" 'BEGIN {
		printf "%s: streamed / in-memory samples/s = %.0f / %.0f = %.3f\n", m, a, b, a / b }'
done

# The reader alone, rank 0 of 2 (64 rows of each global batch of 128; the
# CNN's batch is 32: 16 rows).
reader() {
	local out
	out=$("$READER" "$TRAIN" --ranks 2 "$@") || fail "bench_reader $* failed"
	awk '{print $7}' <<<"$out"
}
echo "reader alone (bench/bench_reader, rank 0 of 2, 400 batches), rows/s:"
printf '  default job (64 rows a batch):        warm %8.0f   cold %8.0f   (the file mapped)\n' \
	"$(reader --batches 400)" "$(reader --batches 400 --cold)"
printf '  the same, one pread a row:             warm %8.0f   cold %8.0f   (as a file over 256 MiB)\n' \
	"$(reader --batches 400 --pread)" "$(reader --batches 400 --cold --pread)"
printf '  CNN, crop:4,flip (16 rows a batch):   warm %8.0f   cold %8.0f\n' \
	"$(reader --batch 32 --batches 400 --augment crop:4,flip --input-shape 28,28,1)" \
	"$(reader --batch 32 --batches 400 --augment crop:4,flip --input-shape 28,28,1 --cold)"
if [ -n "$GZ" ]; then
	read -r gz_rows gz_open < <("$READER" "$GZ" --ranks 2 --batches 400 | awk '{print $7, $13}')
	printf '  default job, chunked+gzip file:       warm %8.0f   (opening it: %.2f s, a child reads it through once; contiguous: %.3f s)\n' \
		"$gz_rows" "$gz_open" "$("$READER" "$TRAIN" --ranks 2 --batches 1 | awk '{print $13}')"
fi
