# What the accuracy comparisons of a preset against its PyTorch peer share
# (bench/resnet_compare.sh, bench/vit_compare.sh), and the benchmarks'
# preset_model (bench/bench.sh, bench/bf16_bench.sh); sourced, it runs
# nothing.
#
# preset_model FILE: a preset's model, its lines joined (the key after it
# ends it).
#
# compare_run PROG TITLE CONF PEER [PEER_ARGS...]: for each seed of SEEDS
# (default "42 1 7"), mtrain on 2 ranks with the preset CONF cut to EPOCHS
# epochs, then PEER (a python script) with 2 threads and PEER_ARGS on the
# same epochs and seed; prints each run's last eval line's raw and EMA test
# accuracy and its minutes, the means over the seeds and whether mtrain's
# mean EMA accuracy is at least PyTorch's. PROG names the script in its
# failures, TITLE the model in the first line. Exits 1 when a run fails.
# The caller sets EPOCHS; the environment may set SEEDS, PYTHON (the python3
# that has torch; default: the first of python3 and /usr/bin/python3 that
# imports it), STEPS (cut both trainers to that many steps, for smoke tests:
# mtrain's schedule then spans those steps, the peer's the epochs') and
# MTRAIN_DATA_DIR. Both trainers run from this tree (build/mtrain).

COMPARE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

preset_model() {
	sed -n '/^model *=/,/^[a-z-]* *=/p' "$1" | sed '$d' | sed 's/^model *= *//; s/#.*//' |
		tr -d ' \t\n'
}

# The last eval line of a log: raw_acc and ema_acc.
compare_last_eval() {
	awk '$1 == "eval" { for (i = 2; i < NF; i++) v[$i] = $(i + 1) }
		END { print v["raw_acc"], v["ema_acc"] }' "$1"
}

compare_run() {
	local prog=$1 title=$2 conf=$3 peer=$4
	shift 4
	local mtrain=$COMPARE_ROOT/build/mtrain seeds=${SEEDS:-${SEED:-42 1 7}} py= p
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	fail() { echo "$prog: FAIL: $*" >&2; exit 1; }
	[ -x "$mtrain" ] || fail "$mtrain missing: jobs/setup.sh builds it"
	for p in ${PYTHON:-} python3 /usr/bin/python3; do
		if command -v "$p" >/dev/null && "$p" -c 'import torch, numpy' 2>/dev/null; then
			py=$p
			break
		fi
	done
	[ -n "$py" ] || fail "no python3 here imports torch (jobs/setup.sh --torch, or set PYTHON)"
	local m_steps=() p_steps=()
	if [ -n "${STEPS:-}" ]; then
		[[ $STEPS =~ ^[1-9][0-9]*$ ]] || fail "STEPS='$STEPS': want a whole number above 0"
		m_steps=(--steps "$STEPS")
		p_steps=(--steps "$STEPS")
	fi
	WORK=$(mktemp -d "/tmp/mtrain-$prog.XXXXXX")
	trap 'rm -rf "$WORK"' EXIT

	local sums=$WORK/sums seed t0 t1 t2 rc m_raw m_ema p_raw p_ema ver
	: >"$sums"
	echo "$title, $conf's recipe for $EPOCHS epochs${STEPS:+ cut to $STEPS steps}, Fashion-MNIST test set:"
	for seed in $seeds; do
		[[ $seed =~ ^[0-9]+$ ]] || fail "SEEDS='$seeds': want whole numbers"
		t0=$(date +%s)
		rc=0
		mpirun -np 2 "$mtrain" --config "$COMPARE_ROOT/$conf" --epochs "$EPOCHS" \
			--seed "$seed" "${m_steps[@]}" --ckpt-dir "$WORK/ck-$seed" --resume never \
			>"$WORK/mtrain.log" 2>&1 || rc=$?
		[ "$rc" = 0 ] ||
			{ tail -20 "$WORK/mtrain.log" >&2; fail "mtrain (seed $seed) exited with status $rc"; }
		t1=$(date +%s)
		"$py" "$COMPARE_ROOT/$peer" --epochs "$EPOCHS" --seed "$seed" --threads 2 "$@" \
			"${p_steps[@]}" >"$WORK/torch.log" 2>&1 || rc=$?
		[ "$rc" = 0 ] || { tail -20 "$WORK/torch.log" >&2
			fail "$(basename "$peer") (seed $seed) exited with status $rc"; }
		t2=$(date +%s)
		rm -rf "$WORK/ck-$seed"
		read -r m_raw m_ema < <(compare_last_eval "$WORK/mtrain.log")
		read -r p_raw p_ema < <(compare_last_eval "$WORK/torch.log")
		[ -n "${m_ema:-}" ] && [ -n "${p_ema:-}" ] || fail "seed $seed: no eval line in a log"
		ver=$(awk '$1 == "torch" && $3 == "threads" {print $2; exit}' "$WORK/torch.log")
		echo "seed $seed:"
		printf "  %-36s raw_acc %s  ema_acc %s  %5.1f min\n" "mtrain, 2 ranks" "$m_raw" "$m_ema" \
			"$(awk -v s=$((t1 - t0)) 'BEGIN {print s / 60}')"
		printf "  %-36s raw_acc %s  ema_acc %s  %5.1f min\n" "PyTorch $ver, 2 threads" "$p_raw" \
			"$p_ema" "$(awk -v s=$((t2 - t1)) 'BEGIN {print s / 60}')"
		echo "$m_raw $m_ema $p_raw $p_ema" >>"$sums"
	done
	awk -v seeds="$seeds" '{ for (i = 1; i <= 4; i++) s[i] += $i; n++; if ($2 >= $4) won++ }
		END {
			printf "mean of %d seeds (%s):\n", n, seeds
			printf "  %-36s raw_acc %.4f  ema_acc %.4f\n", "mtrain", s[1] / n, s[2] / n
			printf "  %-36s raw_acc %.4f  ema_acc %.4f\n", "PyTorch", s[3] / n, s[4] / n
			d = (s[2] - s[4]) / n
			printf "mtrain mean EMA accuracy %s PyTorch'\''s (%+.4f; at least it on %d of %d seeds)\n",
				(d >= 0 ? "is at least" : "is below"), d, won + 0, n }' "$sums"
}
