#!/usr/bin/env bash
# Learning curves from a metrics file (--metrics): training loss, and raw and
# EMA test accuracy, against the global step, with the epoch boundaries
# (each evaluation at an epoch's end) marked. Draws with gnuplot (Debian's
# gnuplot-nox) into a 1000x700 PNG.
#
# usage: jobs/plot.sh METRICS.jsonl [OUT.png]     (default: METRICS.png)
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 METRICS.jsonl [OUT.png]" >&2; exit 2; }
metrics=$1
out=${2:-${metrics%.*}.png}
[ -r "$metrics" ] || { echo "plot: $metrics: cannot read" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "plot: gnuplot is missing (apt-get install gnuplot-nox)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# field NAME: the value of "NAME": in the current line ("" when absent).
# A resumed run appends to the file: a step seen again replaces the earlier.
awk -v dir="$work" '
function field(name,   m) {
	if (!match($0, "\"" name "\":[^,}]*")) return ""
	m = substr($0, RSTART + length(name) + 3, RLENGTH - length(name) - 3)
	return m
}
/"event":"train"/ { loss[field("step")] = field("loss") }
/"event":"eval"/  { s = field("step"); raw[s] = field("raw_acc"); ema[s] = field("ema_acc"); ep[s] = field("epoch") }
END {
	for (s in loss) if (loss[s] != "null") print s, loss[s] > dir "/train.dat"
	for (s in raw) print s, raw[s], ema[s], ep[s] > dir "/eval.dat"
}' "$metrics"
[ -s "$work/train.dat" ] || { echo "plot: $metrics holds no training lines (event train)" >&2; exit 2; }
sort -n -o "$work/train.dat" "$work/train.dat"
touch "$work/eval.dat"
sort -n -o "$work/eval.dat" "$work/eval.dat"

{
	echo "set terminal pngcairo size 1000,700 font ',10'"
	echo "set output '$out'"
	echo "set multiplot layout 2,1 title 'mtrain: $(basename "$metrics")'"
	echo "set grid; set xlabel 'global step'; set xrange [0:$(tail -n 1 "$work/train.dat" | cut -d' ' -f1)]"
	while read -r step _ _ epoch; do
		echo "set arrow from $step, graph 0 to $step, graph 1 nohead dashtype 2 lc rgb 'gray'"
		echo "set label 'epoch $epoch' at $step, graph 0.95 right offset -0.5,0 textcolor rgb 'gray'"
	done <"$work/eval.dat"
	echo "set ylabel 'training loss'; set logscale y; set key bottom left"
	echo "plot '$work/train.dat' using 1:2 with lines lw 2 title 'train loss'"
	echo "unset logscale y; set ylabel 'test accuracy'; set key bottom right"
	if [ -s "$work/eval.dat" ]; then
		echo "plot '$work/eval.dat' using 1:2 with linespoints lw 2 title 'raw', '' using 1:3 with linespoints lw 2 title 'EMA'"
	else
		echo "set label 'no evaluation in this file' at graph 0.5, graph 0.5 center; plot NaN notitle"
	fi
	echo "unset multiplot"
} >"$work/plot.gp"
gnuplot "$work/plot.gp"
echo "wrote $out"
