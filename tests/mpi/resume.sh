# 20 steps straight equal 10 steps, stop, --resume auto, 10 more, bitwise:
# weights, EMA shadows, Adam slots and data position. The stop falls inside
# an epoch (6 steps an epoch) and, second case, on an epoch boundary (12).
. "$(dirname "$0")/lib.sh"
make_data
FLAGS=("${SMALL[@]}" --optimizer adam --ema-decay 0.9 --ema-sync-every 3)
for n in 1 2; do
	ranks $n "${FLAGS[@]}" --steps 20 --ckpt-dir straight$n >/dev/null
	for stop in 10 12; do
		dir=resumed$n-$stop
		ranks $n "${FLAGS[@]}" --steps $stop --ckpt-dir $dir >/dev/null
		[ -f $dir/ckpt-000000$stop.h5 ] || fail "no checkpoint at the stop ($stop)"
		ranks $n "${FLAGS[@]}" --steps 20 --ckpt-dir $dir --resume auto >log
		grep -q "resumed from $dir/ckpt-000000$stop.h5 at step $stop" log ||
			{ cat log; fail "did not resume from step $stop"; }
		same_ckpt straight$n/ckpt-00000020.h5 $dir/ckpt-00000020.h5
	done
done
# --resume never starts afresh even with checkpoints present.
ranks 1 "${FLAGS[@]}" --steps 12 --ckpt-dir resumed1-10 --resume never >log
grep -q "resumed from" log && fail "--resume never resumed"
# A corrupt newest checkpoint is skipped for the one before it.
ranks 1 "${FLAGS[@]}" --steps 10 --ckpt-dir skip >/dev/null
ranks 1 "${FLAGS[@]}" --steps 12 --ckpt-dir skip >/dev/null
truncate -s 2000 skip/ckpt-00000012.h5
ranks 1 "${FLAGS[@]}" --steps 20 --ckpt-dir skip >log 2>err
grep -q "skipping checkpoint" err || { cat err; fail "corrupt checkpoint not reported"; }
grep -q "resumed from skip/ckpt-00000010.h5" log || fail "did not fall back to step 10"
same_ckpt straight1/ckpt-00000020.h5 skip/ckpt-00000020.h5
pass "resume is bitwise identical to the run never stopped"
