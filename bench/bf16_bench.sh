#!/usr/bin/env bash
# bf16 against fp32 on the CPU, speed (issue 37): for each model of MODELS
# (default "mlp cnn resnet vit": the default job's MLP, bench/bench.sh's
# CNN, jobs/fmnist-resnet.conf's and jobs/fmnist-vit.conf's models; Adam,
# batch 128 as bench/bench.sh), PAIRS rounds (default 3) of: mtrain on 2
# ranks with --precision fp32, then bf16, then PyTorch (bench/bench_torch.py,
# one process at its best thread count, probed first for each precision)
# in fp32 and with CPU autocast to bf16. Prints each round's samples/s and
# the medians over the rounds of: mtrain bf16 / mtrain fp32, mtrain bf16 /
# PyTorch bf16, mtrain fp32 / PyTorch fp32. The rounds take the four in
# turn, so that a slow spell of the machine falls on them alike. mtrain's
# runs: the MLP 1404 steps (3 epochs), the others 60 (CNN) or 30.
#
# usage: bench/bf16_bench.sh [BUILD_DIR]     (default ./build)
# environment: MODELS, PAIRS, PYTHON (the python3 that has torch; without
#   one the PyTorch columns are left out), MTRAIN_DATA_DIR.
# On a CPU without AVX512_BF16 mtrain's bf16 runs forced (--force-bf16 on:
# its operands rounded for the fp32 kernels, slower than fp32), and the
# first line says so. About 15 minutes with the defaults on 2 cores.
# Exit status 1 when a run fails or prints no figure.
set -euo pipefail
BUILD=${1:-build}
MTRAIN=$BUILD/mtrain
TORCH_PEER=$(dirname "$0")/bench_torch.py
. "$(dirname "$0")/compare_lib.sh" # preset_model
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail() { echo "bf16_bench: FAIL: $*" >&2; exit 1; }
[ -x "$MTRAIN" ] || fail "$MTRAIN missing: jobs/setup.sh builds it"
PAIRS=${PAIRS:-3}
[[ $PAIRS =~ ^[1-9][0-9]*$ ]] || fail "PAIRS='$PAIRS': want a whole number above 0"
CNN=conv2d:32:3,batchnorm,relu,maxpool2d:2,conv2d:64:3,batchnorm,relu,maxpool2d:2,flatten,dense:128,relu,dropout:0.3,dense
WORK=$(mktemp -d /tmp/mtrain-bf16-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
PY=
for p in ${PYTHON:-} python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null && "$p" -c 'import torch' 2>/dev/null; then
		PY=$p
		break
	fi
done
NUM='^[0-9]+(\.[0-9]+)?$'

# mtrain_sps MODEL PRECISION: samples/s of a steady-state run on 2 ranks.
mtrain_sps() {
	local args=(--input-shape 28,28,1) log=$WORK/log sps
	case $1 in
	mlp) args+=(--steps 1404) ;;
	cnn) args+=(--model "$CNN" --steps 60) ;;
	resnet) args+=(--model "$(preset_model "$COMPARE_ROOT/jobs/fmnist-resnet.conf")" --steps 30) ;;
	vit) args+=(--model "$(preset_model "$COMPARE_ROOT/jobs/fmnist-vit.conf")" --steps 30) ;;
	esac
	timeout 600 mpirun -np 2 "$MTRAIN" "${args[@]}" --batch 128 \
		--device cpu --eval-data none --log-every 1000000 --resume never \
		--ckpt-dir "$WORK/ck" --precision "$2" --force-bf16 on >"$log" 2>&1 ||
		{ tail -20 "$log" >&2; fail "mtrain $1 $2"; }
	rm -rf "$WORK/ck"
	sps=$(awk '$1 == "timing" { for (i = 3; i < NF; i += 2) if ($i == "samples/s") print $(i + 1) }' "$log")
	[[ $sps =~ $NUM ]] || { cat "$log" >&2; fail "mtrain $1 $2: no samples/s"; }
	echo "$sps"
}

# torch_sps MODEL PRECISION THREADS [REPEATS]: PyTorch's samples/s (the
# best thread count's when THREADS is 1,2), and that count.
torch_sps() {
	local out=$WORK/torch extra=()
	[ "$1" = cnn ] && extra=(--batchnorm)
	timeout 900 "$PY" "$TORCH_PEER" "$1" "${extra[@]}" --precision "$2" --threads "$3" \
		--repeats "${4:-1}" >"$out" 2>&1 || { cat "$out" >&2; fail "bench_torch.py $1 $2"; }
	awk '$1 == "torch" && (best == "" || $9 > best) { best = $9; t = $5 } END { print best, t }' "$out" |
		{ read -r s t; [[ $s =~ $NUM ]] || fail "bench_torch.py $1 $2: no samples/s"; echo "$s $t"; }
}

echo "bf16 against fp32 on $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p')), mtrain on 2 ranks;" \
	"$(grep -qw avx512_bf16 /proc/cpuinfo && echo "AVX512_BF16: oneDNN's bf16 kernels" ||
		echo "no AVX512_BF16: mtrain's bf16 forced (rounded operands, fp32 kernels)")"
[ -n "$PY" ] && echo "PyTorch $("$PY" -c 'import torch; print(torch.__version__)'), one process," \
	"its best thread count of 1 and 2 for each precision (probed first)"
for model in ${MODELS:-mlp cnn resnet vit}; do
	case $model in mlp | cnn | resnet | vit) ;; *) fail "MODELS: want any of mlp cnn resnet vit" ;; esac
	declare -A threads=()
	if [ -n "$PY" ]; then
		for prec in fp32 bf16; do
			read -r _ threads[$prec] < <(torch_sps "$model" $prec 1,2 2)
		done
	fi
	: >"$WORK/rounds"
	echo "== $model: samples/s a round: mtrain fp32, bf16${PY:+; PyTorch fp32 (${threads[fp32]} threads), bf16 (${threads[bf16]})}"
	for ((r = 1; r <= PAIRS; r++)); do
		m32=$(mtrain_sps "$model" fp32)
		m16=$(mtrain_sps "$model" bf16)
		t32=- t16=-
		if [ -n "$PY" ]; then
			read -r t32 _ < <(torch_sps "$model" fp32 "${threads[fp32]}")
			read -r t16 _ < <(torch_sps "$model" bf16 "${threads[bf16]}")
		fi
		echo "  round $r: mtrain $m32, $m16${PY:+; PyTorch $t32, $t16}"
		echo "$m32 $m16 $t32 $t16" >>"$WORK/rounds"
	done
	awk -v py="$PY" '
		function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
			if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } return a[int((n + 1) / 2)] }
		{ n++; own[n] = $2 / $1; if (py != "") { b[n] = $2 / $4; f[n] = $1 / $3 } }
		END { printf "  median of the rounds: mtrain bf16 / fp32 %.2fx", med(own, n)
			if (py != "") printf "; mtrain bf16 / PyTorch bf16 %.2fx; mtrain fp32 / PyTorch fp32 %.2fx", med(b, n), med(f, n)
			printf "\n" }' "$WORK/rounds"
	unset threads
done
