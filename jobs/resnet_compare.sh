#!/usr/bin/env bash
# ResNet-20 on Fashion-MNIST side by side: jobs/fmnist-resnet.conf's recipe
# cut to EPOCHS epochs, trained by mtrain on 2 ranks and by its PyTorch peer
# (jobs/resnet_torch.py: the same model, initialisers, batch norm, recipe
# and augmentation, batch norm per half batch as 2 ranks have it) with 2
# threads, one after the other; prints both test accuracies (raw and EMA)
# and minutes, and whether mtrain's EMA accuracy is at least PyTorch's.
#
# usage: jobs/resnet_compare.sh [EPOCHS]     (default 5; the build in ./build)
# environment: SEED (default the preset's: 42; both take it), PYTHON (the
#   python3 that has torch; default: the first of python3 and
#   /usr/bin/python3 that imports it), MTRAIN_DATA_DIR.
# Exit status 1 when a run fails, 0 otherwise (the verdict is printed).
set -euo pipefail
EPOCHS=${1:-5}
SEED=${SEED:-42}
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

t0=$(date +%s)
mpirun -np 2 "$MTRAIN" --config "$ROOT/jobs/fmnist-resnet.conf" --epochs "$EPOCHS" --seed "$SEED" \
	--ckpt-dir "$WORK/ck" --resume never >"$WORK/mtrain.log" 2>&1 ||
	{ tail -20 "$WORK/mtrain.log" >&2; fail "mtrain exited with status $?"; }
t1=$(date +%s)
"$PY" "$ROOT/jobs/resnet_torch.py" --epochs "$EPOCHS" --seed "$SEED" --threads 2 --ranks 2 \
	>"$WORK/torch.log" 2>&1 || { tail -20 "$WORK/torch.log" >&2; fail "resnet_torch.py failed"; }
t2=$(date +%s)

# The last eval line of each: raw_acc and ema_acc.
read -r m_raw m_ema < <(awk '$1 == "eval" { for (i = 2; i < NF; i++) v[$i] = $(i + 1) }
	END { print v["raw_acc"], v["ema_acc"] }' "$WORK/mtrain.log")
read -r p_raw p_ema < <(awk '$1 == "eval" { for (i = 2; i < NF; i++) v[$i] = $(i + 1) }
	END { print v["raw_acc"], v["ema_acc"] }' "$WORK/torch.log")
[ -n "${m_ema:-}" ] && [ -n "${p_ema:-}" ] || fail "no eval line in a log"
ver=$(awk '$1 == "torch" && $3 == "threads" {print $2; exit}' "$WORK/torch.log")
echo "ResNet-20, jobs/fmnist-resnet.conf's recipe for $EPOCHS epochs, seed $SEED, Fashion-MNIST test set:"
printf "  %-36s raw_acc %s  ema_acc %s  %5.1f min\n" "mtrain, 2 ranks" "$m_raw" "$m_ema" \
	"$(awk -v s=$((t1 - t0)) 'BEGIN {print s / 60}')"
printf "  %-36s raw_acc %s  ema_acc %s  %5.1f min\n" "PyTorch $ver, 2 threads" "$p_raw" "$p_ema" \
	"$(awk -v s=$((t2 - t1)) 'BEGIN {print s / 60}')"
awk -v m="$m_ema" -v p="$p_ema" 'BEGIN {
	printf "mtrain EMA accuracy %s PyTorch'\''s (%+.4f)\n", (m >= p ? "is at least" : "is below"), m - p }'
