#!/usr/bin/env bash
# A text preset side by side with nanoGPT: for each seed, mtrain trains the
# preset on 2 ranks, then nanoGPT's own train.py (bench/nanogpt_peer.py: the
# same shape and recipe, the same tokens, float32 on the CPU with THREADS
# threads) trains it; prints each run's validation loss (mtrain's raw
# weights over the whole validation split, nanoGPT's estimate over 200
# batches of it) and tokens/s (training steps only), their means over the
# seeds, the speed ratio, and whether mtrain's mean validation loss is at
# most nanoGPT's and its tokens/s at least 1.5 times.
#
# usage: bench/gpt_compare.sh [CONF]   (default jobs/text-gpt.conf; the build in ./build)
# environment: NANOGPT (a checkout of karpathy/nanoGPT: train.py, model.py,
#   configurator.py; required), SEEDS (default "1337 1 7": nanoGPT's seed
#   and two more), PYTHON (a python3 with torch, numpy and h5py; default
#   python3), THREADS (nanoGPT's, default 2: its best here, 14.6k tokens/s
#   against 10.3k with one), STEPS (both cut to that many steps: smoke
#   tests), MTRAIN_DATA_DIR.
# Exit status 1 when a run fails, 0 otherwise (the verdict is printed).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONF=${1:-jobs/text-gpt.conf}
SEEDS=${SEEDS:-1337 1 7}
PY=${PYTHON:-python3}
THREADS=${THREADS:-2}
fail() { echo "gpt_compare: FAIL: $*" >&2; exit 1; }
[ -n "${NANOGPT:-}" ] || fail "set NANOGPT to a checkout of karpathy/nanoGPT"
[ -x "$ROOT/build/mtrain" ] || fail "$ROOT/build/mtrain missing: jobs/setup.sh builds it"
[ -f "$ROOT/$CONF" ] || fail "$CONF: no such preset"
"$PY" -c 'import torch, numpy, h5py' 2>/dev/null || fail "$PY cannot import torch, numpy and h5py"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
steps=()
[ -z "${STEPS:-}" ] || steps=(--steps "$STEPS")
WORK=$(mktemp -d /tmp/mtrain-gpt_compare.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
: >"$WORK/sums"
echo "$CONF's shape and recipe${STEPS:+ cut to $STEPS steps}; validation loss per token, tokens/s:"
for seed in $SEEDS; do
	[[ $seed =~ ^[0-9]+$ ]] || fail "SEEDS='$SEEDS': want whole numbers"
	mpirun -np 2 "$ROOT/build/mtrain" --config "$ROOT/$CONF" --seed "$seed" "${steps[@]}" \
		--ckpt-dir "$WORK/ck" --resume never >"$WORK/mtrain.log" 2>&1 ||
		{ tail -20 "$WORK/mtrain.log" >&2; fail "mtrain (seed $seed) failed"; }
	rm -rf "$WORK/ck"
	data=$(awk '$1 == "data" { print $2; exit }' "$WORK/mtrain.log")
	read -r m_loss m_ema m_rate < <(awk '
		$1 == "step" { for (i = 2; i < NF; i++) if ($i == "tokens/s") { r += $(i + 1); n++ } }
		$1 == "eval" { for (i = 2; i < NF; i++) v[$i] = $(i + 1) }
		END { if (n) printf "%s %s %.0f\n", v["raw_loss"], v["ema_loss"], r / n }' "$WORK/mtrain.log")
	rm -rf "$WORK/peer"
	"$PY" "$ROOT/bench/nanogpt_peer.py" --nanogpt "$NANOGPT" --conf "$ROOT/$CONF" \
		--data "$data" --work "$WORK/peer" --seed "$seed" --threads "$THREADS" "${steps[@]}" \
		>"$WORK/peer.log" 2>&1 || { tail -20 "$WORK/peer.log" >&2; fail "nanoGPT (seed $seed) failed"; }
	read -r p_loss p_rate ver < <(awk '$1 == "peer" { print $3, $5, $9 }' "$WORK/peer.log")
	[ -n "${m_rate:-}" ] && [ -n "${p_rate:-}" ] || fail "seed $seed: no figures in a log"
	echo "seed $seed:"
	printf "  %-38s val_loss %s (EMA %s)  tokens/s %6d\n" "mtrain, 2 ranks" "$m_loss" "$m_ema" "$m_rate"
	printf "  %-38s val_loss %s           tokens/s %6d\n" "nanoGPT, torch $ver, $THREADS threads" \
		"$p_loss" "$p_rate"
	echo "$m_loss $m_rate $p_loss $p_rate" >>"$WORK/sums"
done
awk '{ for (i = 1; i <= 4; i++) s[i] += $i; n++ }
	END {
		printf "mean of %d seeds: mtrain val_loss %.4f tokens/s %.0f; nanoGPT val_loss %.4f tokens/s %.0f\n",
			n, s[1] / n, s[2] / n, s[3] / n, s[4] / n
		printf "mtrain val_loss %s nanoGPT'\''s (%+.4f); tokens/s %.2fx nanoGPT'\''s (%s 1.5x)\n",
			(s[1] <= s[3] ? "is at most" : "is above"), (s[1] - s[3]) / n, s[2] / s[4],
			(s[2] >= 1.5 * s[4] ? "at least" : "below") }' "$WORK/sums"
