#!/usr/bin/env bash
# bf16 against fp32 on the CPU (issue 37): each preset of PRESETS (default
# "cnn resnet vit": jobs/fmnist-PRESET.conf) cut to EPOCHS epochs, trained
# by mtrain on 2 ranks with --precision fp32 and with --precision bf16
# (with --force-bf16 on, which a CPU without AVX512_BF16 needs), for each
# seed of SEEDS; prints each run's EMA (and raw) test accuracy and minutes, the means
# over the seeds, and whether bf16's mean is within seed noise of fp32's:
# the difference of the means at most the larger spread (largest less
# smallest accuracy over the seeds) of the two precisions.
#
# usage: bench/bf16_compare.sh [EPOCHS]     (default 1; the build in ./build)
# environment: PRESETS, SEEDS (default "42 1 7"), MTRAIN_DATA_DIR.
# About 20 minutes at 1 epoch with the defaults on 2 cores without
# AVX512_BF16 (bf16 is slower there: its operands are rounded in software).
# Exit status 1 when a run fails, 0 otherwise (the verdicts are printed).
set -euo pipefail
EPOCHS=${1:-1}
. "$(dirname "$0")/compare_lib.sh"
MTRAIN=$COMPARE_ROOT/build/mtrain
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail() { echo "bf16_compare: FAIL: $*" >&2; exit 1; }
[ -x "$MTRAIN" ] || fail "$MTRAIN missing: jobs/setup.sh builds it"
[[ $EPOCHS =~ ^[1-9][0-9]*$ ]] || fail "EPOCHS='$EPOCHS': want a whole number above 0"
WORK=$(mktemp -d /tmp/mtrain-bf16.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
for preset in ${PRESETS:-cnn resnet vit}; do
	conf=$COMPARE_ROOT/jobs/fmnist-$preset.conf
	[ -f "$conf" ] || fail "no $conf"
	echo "jobs/fmnist-$preset.conf for $EPOCHS epoch(s), 2 ranks, Fashion-MNIST test set, EMA (raw) accuracy:"
	: >"$WORK/acc"
	for seed in ${SEEDS:-42 1 7}; do
		[[ $seed =~ ^[0-9]+$ ]] || fail "SEEDS: want whole numbers"
		line="  seed $seed:"
		for prec in fp32 bf16; do
			t0=$(date +%s)
			mpirun -np 2 "$MTRAIN" --config "$conf" --epochs "$EPOCHS" --seed "$seed" \
				--precision $prec --force-bf16 on --ckpt-dir "$WORK/ck" --resume never \
				>"$WORK/log" 2>&1 || { tail -20 "$WORK/log" >&2; fail "$preset $prec seed $seed"; }
			rm -rf "$WORK/ck"
			read -r raw ema < <(compare_last_eval "$WORK/log")
			[ -n "${ema:-}" ] || fail "$preset $prec seed $seed: no eval line"
			line+=$(printf "  %s %s, raw %s (%.1f min)" $prec "$ema" "$raw" \
				"$(awk -v s=$(($(date +%s) - t0)) 'BEGIN {print s / 60}')")
			echo "$prec $ema $raw" >>"$WORK/acc"
		done
		echo "$line"
	done
	awk '{ n[$1]++; s[$1] += $2; raw[$1] += $3
		if (!($1 in lo) || $2 < lo[$1]) lo[$1] = $2
		if (!($1 in hi) || $2 > hi[$1]) hi[$1] = $2 }
		END {
			d = s["bf16"] / n["bf16"] - s["fp32"] / n["fp32"]
			r = hi["fp32"] - lo["fp32"]; if (hi["bf16"] - lo["bf16"] > r) r = hi["bf16"] - lo["bf16"]
			printf "  mean: fp32 %.4f, bf16 %.4f (%+.4f); seed spread %.4f: bf16 %s" \
				" (raw: fp32 %.4f, bf16 %.4f)\n", s["fp32"] / n["fp32"], s["bf16"] / n["bf16"],
				d, r, (d * d <= r * r ? "within seed noise of fp32" : "NOT within seed noise"),
				raw["fp32"] / n["fp32"], raw["bf16"] / n["bf16"] }' "$WORK/acc"
done
