#!/usr/bin/env bash
# ResNet-20 on Fashion-MNIST side by side: jobs/fmnist-resnet.conf's recipe
# cut to EPOCHS epochs, trained by mtrain on 2 ranks and by its PyTorch peer
# (bench/resnet_torch.py: the same model, initialisers, batch norm, recipe
# and augmentation, batch norm per half batch as 2 ranks have it) with 2
# threads, one after the other, for each seed; prints both test accuracies
# (raw and EMA) and minutes per seed, their means over the seeds, and
# whether mtrain's mean EMA accuracy is at least PyTorch's. One seed's
# difference is mostly the seed (about 0.3% either way at 5 epochs): the
# verdict is on the mean.
#
# usage: bench/resnet_compare.sh [EPOCHS]     (default 5; the build in ./build)
# environment: SEEDS (default "42 1 7": the preset's and two more; each
#   about 19 minutes at 5 epochs on 2 cores; both trainers take it),
#   PYTHON (the python3 that has torch; default: the first of python3 and
#   /usr/bin/python3 that imports it), MTRAIN_DATA_DIR.
# Exit status 1 when a run fails, 0 otherwise (the verdict is printed).
set -euo pipefail
EPOCHS=${1:-5}
SEEDS=${SEEDS:-${SEED:-42 1 7}}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MTRAIN=$ROOT/build/mtrain
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail() { echo "resnet_compare: FAIL: $*" >&2; exit 1; }
[ -x "$MTRAIN" ] || fail "$MTRAIN missing: jobs/setup.sh builds it"
PY=
for p in ${PYTHON:-} python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null && "$p" -c 'import torch, numpy' 2>/dev/null; then
		PY=$p
		break
	fi
done
[ -n "$PY" ] || fail "no python3 here imports torch (jobs/setup.sh --torch, or set PYTHON)"
WORK=$(mktemp -d /tmp/mtrain-resnet.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# The last eval line of a log: raw_acc and ema_acc.
last_eval() {
	awk '$1 == "eval" { for (i = 2; i < NF; i++) v[$i] = $(i + 1) }
		END { print v["raw_acc"], v["ema_acc"] }' "$1"
}

SUMS=$WORK/sums
: >"$SUMS"
echo "ResNet-20, jobs/fmnist-resnet.conf's recipe for $EPOCHS epochs, Fashion-MNIST test set:"
for seed in $SEEDS; do
	[[ $seed =~ ^[0-9]+$ ]] || fail "SEEDS='$SEEDS': want whole numbers"
	t0=$(date +%s)
	mpirun -np 2 "$MTRAIN" --config "$ROOT/jobs/fmnist-resnet.conf" --epochs "$EPOCHS" \
		--seed "$seed" --ckpt-dir "$WORK/ck-$seed" --resume never >"$WORK/mtrain.log" 2>&1 ||
		{ tail -20 "$WORK/mtrain.log" >&2; fail "mtrain (seed $seed) exited with status $?"; }
	t1=$(date +%s)
	"$PY" "$ROOT/bench/resnet_torch.py" --epochs "$EPOCHS" --seed "$seed" --threads 2 --ranks 2 \
		>"$WORK/torch.log" 2>&1 ||
		{ tail -20 "$WORK/torch.log" >&2; fail "resnet_torch.py (seed $seed) failed"; }
	t2=$(date +%s)
	rm -rf "$WORK/ck-$seed"
	read -r m_raw m_ema < <(last_eval "$WORK/mtrain.log")
	read -r p_raw p_ema < <(last_eval "$WORK/torch.log")
	[ -n "${m_ema:-}" ] && [ -n "${p_ema:-}" ] || fail "seed $seed: no eval line in a log"
	ver=$(awk '$1 == "torch" && $3 == "threads" {print $2; exit}' "$WORK/torch.log")
	echo "seed $seed:"
	printf "  %-36s raw_acc %s  ema_acc %s  %5.1f min\n" "mtrain, 2 ranks" "$m_raw" "$m_ema" \
		"$(awk -v s=$((t1 - t0)) 'BEGIN {print s / 60}')"
	printf "  %-36s raw_acc %s  ema_acc %s  %5.1f min\n" "PyTorch $ver, 2 threads" "$p_raw" \
		"$p_ema" "$(awk -v s=$((t2 - t1)) 'BEGIN {print s / 60}')"
	echo "$m_raw $m_ema $p_raw $p_ema" >>"$SUMS"
done
awk -v seeds="$SEEDS" '{ for (i = 1; i <= 4; i++) s[i] += $i; n++; if ($2 >= $4) won++ }
	END {
		printf "mean of %d seeds (%s):\n", n, seeds
		printf "  %-36s raw_acc %.4f  ema_acc %.4f\n", "mtrain", s[1] / n, s[2] / n
		printf "  %-36s raw_acc %.4f  ema_acc %.4f\n", "PyTorch", s[3] / n, s[4] / n
		d = (s[2] - s[4]) / n
		printf "mtrain mean EMA accuracy %s PyTorch'\''s (%+.4f; at least it on %d of %d seeds)\n",
			(d >= 0 ? "is at least" : "is below"), d, won + 0, n }' "$SUMS"
