#!/usr/bin/env bash
# Learning curves from a metrics file (--metrics): training loss, and raw and
# EMA test accuracy (a language model's: validation loss per token, its
# eval records having a perplexity), against the global step, with each
# evaluation (and the epoch it is in) marked. Draws with gnuplot (Debian's
# gnuplot-nox) into a 1000x700 PNG, written whole or not at all.
#
# usage: jobs/plot.sh METRICS.jsonl [OUT.png]     (default: METRICS.png)
set -euo pipefail
die() { echo "plot: $*" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 METRICS.jsonl [OUT.png]" >&2; exit 2; }
metrics=$1
base=$(basename -- "$metrics")
out=${2:-$(dirname -- "$metrics")/${base%.*}.png}
[ -f "$metrics" ] && [ -r "$metrics" ] || die "$metrics: cannot read"
[ ! -d "$out" ] || die "$out: is a folder"
outdir=$(dirname -- "$out")
[ -d "$outdir" ] && [ -w "$outdir" ] || die "$out: cannot write in $outdir"
command -v gnuplot >/dev/null || die "gnuplot is missing (apt-get install gnuplot-nox)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Only numbers reach gnuplot: a field that is not one is left out. A resumed
# run appends to the file: a step seen again replaces the earlier one.
awk -v dir="$work" '
function field(name,   v) {
	if (!match($0, "\"" name "\":[^,}]*")) return ""
	v = substr($0, RSTART + length(name) + 3, RLENGTH - length(name) - 3)
	return v ~ /^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ ? v : ""
}
/"event":"train"/ { s = field("step"); if (s != "") { seen = 1; loss[s] = field("loss") } }
/"event":"eval"/  {
	s = field("step")
	if (s == "") next
	lm = field("ema_ppl") != ""
	raw[s] = field(lm ? "raw_loss" : "raw_acc"); ema[s] = field(lm ? "ema_loss" : "ema_acc")
	ep[s] = field("epoch")
}
END {
	for (s in loss) if (loss[s] != "") print s, loss[s] > dir "/train.dat"
	for (s in raw) if (raw[s] != "" && ema[s] != "") print s, raw[s], ema[s], ep[s] > dir "/eval.dat"
	if (lm) print "" > dir "/lm"
	exit !seen
}' "$metrics" || die "$metrics holds no training lines (event train)"
# A language model's evaluations are its validation loss, else accuracy.
what="test accuracy"
[ ! -e "$work/lm" ] || what="validation loss per token"
touch "$work/train.dat" "$work/eval.dat"
sort -n -o "$work/train.dat" "$work/train.dat"
sort -n -o "$work/eval.dat" "$work/eval.dat"
last=$(cat "$work/train.dat" "$work/eval.dat" | awk '$1 > m {m = $1} END {print m + 0}')

# panel YLABEL FILE PLOT NOTE: one panel, or NOTE in an empty one.
panel() {
	if [ -s "$2" ]; then
		echo "set ylabel '$1'; $3"
	else
		echo "set ylabel '$1'; unset logscale y; set yrange [0:1]"
		echo "set label 99 '$4' at graph 0.5, graph 0.5 center; plot 2 notitle; unset label 99"
		echo "set autoscale y"
	fi
}
{
	echo "set terminal pngcairo size 1000,700 font ',10'"
	echo "set output '$work/out.png'"
	echo "set multiplot layout 2,1 title 'mtrain learning curves'"
	echo "set grid; set xlabel 'global step'; set xrange [0:$((last > 0 ? last : 1))]"
	# Every evaluation's line; a label on every k-th, at most about 10
	# of them (30 epochs' labels ran into each other).
	evals=$(wc -l <"$work/eval.dat")
	every=$(((evals + 9) / 10))
	i=0
	while read -r step _ _ epoch; do
		i=$((i + 1))
		echo "set arrow from $step, graph 0 to $step, graph 1 nohead dashtype 2 lc rgb 'gray'"
		[ -z "$epoch" ] || [ $((i % every)) != 0 ] ||
			echo "set label 'epoch $epoch' at $step, graph 0.95 right offset -0.5,0 textcolor rgb 'gray'"
	done <"$work/eval.dat"
	panel "training loss" "$work/train.dat" \
		"set logscale y; set key bottom left; plot '$work/train.dat' using 1:2 with lines lw 2 title 'train loss'" \
		"no finite training loss in this file"
	key=$([ -e "$work/lm" ] && echo "top right" || echo "bottom right")
	panel "$what" "$work/eval.dat" \
		"unset logscale y; set key $key; plot '$work/eval.dat' using 1:2 with linespoints lw 2 title 'raw', '' using 1:3 with linespoints lw 2 title 'EMA'" \
		"no evaluation in this file"
	echo "unset multiplot"
} >"$work/plot.gp"
gnuplot "$work/plot.gp" 2>"$work/gnuplot.err" || die "gnuplot failed: $(head -c 300 "$work/gnuplot.err")"
mv -f -- "$work/out.png" "$out" || die "$out: cannot write"
echo "wrote $out (training loss; $what)"
