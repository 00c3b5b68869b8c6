#!/usr/bin/env bash
# What stepping together costs 2 ranks here, apart from mtrain: the default
# job's MLP step as bare products (bench_lockstep) on 1 rank, then on 2
# ranks free, with a barrier after each step and with ZeRO-1's collectives
# after each, ROUNDS times in turn. Prints each run's line, then the medians
# over the rounds and the ceiling they set on the MLP's 2-rank speed-up:
#   interference = 2 ranks' free step / 1 rank's (caches, memory, the VM);
#   wait         = the barrier's share: the slower rank's pauses;
#   collectives  = the reduce-scatter and all-gather beyond the barrier;
#   ceiling      = 2 x 1 rank's step / 2 ranks' step with the collectives,
#                  the products alone (training adds its other phases).
#
# usage: bench/lockstep.sh [BUILD_DIR]     (default ./build)
# environment: ROWS (per rank, default 64), STEPS (a phase, default 1000),
#   ROUNDS (default 5), MPIRUN (default mpirun).
set -euo pipefail
build=${1:-build}
prog=$build/bench/bench_lockstep
[ -x "$prog" ] || { echo "lockstep: no $prog (build first: jobs/setup.sh)" >&2; exit 1; }
MPIRUN=${MPIRUN:-mpirun}
rows=${ROWS:-64} steps=${STEPS:-1000} rounds=${ROUNDS:-5}
echo "bench_lockstep, $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), rows $rows a rank, $steps steps a phase, $(date -u +%F)"
one=() two=()
for r in $(seq "$rounds"); do
	for n in 1 2; do
		line=$(timeout 600 "$MPIRUN" -np $n "$prog" "$rows" "$steps" 1) ||
			{ echo "lockstep: bench_lockstep on $n ranks failed" >&2; exit 1; }
		echo "round $r: $line"
		case $line in *" sums ok") ;; *) echo "lockstep: the collectives' sums are wrong" >&2; exit 1 ;; esac
		if [ $n = 1 ]; then one+=("$line"); else two+=("$line"); fi
	done
done
# field NAME LINE...: NAME's value in each line
field() { local k=$1; shift; printf '%s\n' "$@" | sed -n "s/.* $k \([0-9.]*\).*/\1/p"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2 }'; }
free1=$(field free_ms "${one[@]}" | median)
free2=$(field free_ms "${two[@]}" | median)
pair2=$(field pairmax_ms "${two[@]}" | median)
bar2=$(field barrier_ms "${two[@]}" | median)
red2=$(field reduce_ms "${two[@]}" | median)
awk -v f1="$free1" -v f2="$free2" -v p="$pair2" -v b="$bar2" -v r="$red2" 'BEGIN {
	printf "medians, ms a step: 1 rank %.4f; 2 ranks free %.4f, pairmax %.4f, barrier %.4f, with the collectives %.4f\n", f1, f2, p, b, r
	printf "interference %.3fx, wait %.3fx, collectives %.3fx: ceiling on 2 ranks / 1 rank %.2fx (free of all three 2.00x)\n", f2 / f1, b / f2, r / b, 2 * f1 / r
}'
