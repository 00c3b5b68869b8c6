#!/usr/bin/env bash
# Runs the libFuzzer targets, each for FUZZ_SECONDS (default 600), starting
# from its seed corpus (tests/fuzz/corpus/NAME; new inputs go to a scratch
# copy), two at a time. A crash leaves crash-* in OUT (default
# ./fuzz-out/NAME); make each one a regression test.
#   CC=clang cmake -S . -B build-fuzz -DMTRAIN_FUZZ=ON -DMTRAIN_SANITIZE=ON -DMTRAIN_CUDA=OFF
#   cmake --build build-fuzz -j2 && tests/fuzz/run.sh build-fuzz [TARGET...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: tests/fuzz/run.sh BUILD_DIR [config idx dataset ckpt weights]}
shift
targets=("${@:-config idx dataset ckpt weights}")
read -r -a targets <<<"${targets[*]}"
out=${FUZZ_OUT:-fuzz-out}
export ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0 LSAN_OPTIONS=suppressions=$here/../sanitize.supp:use_tls=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run() {
	local name=$1 dir=$out/$1
	mkdir -p "$dir/corpus"
	cp -n "$here/corpus/$name/"* "$dir/corpus/"
	# HDF5's own crashes on forged files would end a plain run at the first:
	# the HDF5 targets run forked, keeping every crash and going on.
	local fork=()
	case $name in dataset | ckpt | weights) fork=(-fork=1 -ignore_crashes=1) ;; esac
	(cd "$dir" && "$build/tests/fuzz/fuzz_$name" -max_total_time="${FUZZ_SECONDS:-600}" \
		"${fork[@]}" -print_final_stats=1 corpus >log 2>&1) || true
	echo "fuzz_$name: $(grep -E '^stat::number_of_executed_units|^#[0-9]+.*exec/s' "$dir/log" | tail -n 1 | sed -E 's/^#([0-9]+).*/\1/; s/.* //') runs," \
		"$(ls "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* 2>/dev/null | wc -l) findings," \
		"corpus $(ls "$dir/corpus" | wc -l)"
}
build=$(cd "$build" && pwd)
for ((i = 0; i < ${#targets[@]}; i += 2)); do
	run "${targets[i]}" &
	[ $((i + 1)) -lt ${#targets[@]} ] && run "${targets[i + 1]}" &
	wait
done
