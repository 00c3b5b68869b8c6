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
# 3 ranks, momentum, shadows broadcast every step or every 7: resumed from a
# checkpoint the 20-step run itself wrote mid-epoch (--ckpt-every 7).
for sync in 1 7; do
	F=("${SMALL[@]}" --optimizer momentum --nesterov --lr 0.05 --ema-sync-every $sync --ckpt-every 7)
	ranks 3 "${F[@]}" --steps 20 --ckpt-dir m$sync >/dev/null
	mkdir r$sync
	cp m$sync/ckpt-00000014.h5 r$sync/
	ranks 3 "${F[@]}" --steps 20 --ckpt-dir r$sync >log
	grep -q "resumed from r$sync/ckpt-00000014.h5 at step 14" log || fail "no resume at 14"
	same_ckpt m$sync/ckpt-00000020.h5 r$sync/ckpt-00000020.h5
done
# The loop hands the EMA the number of completed updates: between two
# consecutive checkpoints the shadows moved by exactly TF's rule.
ranks 2 "${FLAGS[@]}" --ema-decay 0.999 --ema-sync-every 1 --steps 3 --ckpt-every 1 --ckpt-dir e >/dev/null
for s in 1 2; do
	"$CMP" --ema-step e/ckpt-0000000$s.h5 e/ckpt-0000000$((s + 1)).h5 0.999 || fail "EMA rule at step $((s + 1))"
done
"$CMP" --ema-step e/ckpt-00000001.h5 e/ckpt-00000003.h5 0.999 >/dev/null 2>&1 &&
	fail "--ema-step accepted checkpoints two steps apart"
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
# Resuming for longer is silent; resuming with another learning rate works
# but is named in a warning.
"$MTRAIN" "${FLAGS[@]}" --steps 22 --ckpt-dir skip >/dev/null 2>err
[ ! -s err ] || { cat err; fail "a longer resumed run warned"; }
"$MTRAIN" "${FLAGS[@]}" --steps 24 --lr 0.02 --ckpt-dir skip >/dev/null 2>err
grep -q "skip/ckpt-00000022.h5 was written with 'lr = .*'; this run has 'lr = 0.0199" err ||
	{ cat err; fail "no warning for a changed learning rate"; }
pass "resume is bitwise identical to the run never stopped"
# Checkpoints by time (--ckpt-every-min), on rank 0's clock and agreed by
# every rank: rank 1 pausing 2 s after step 10 (rank 0 waits for it in
# step 11's collectives) puts a checkpoint at step 11 with a 1.2 s interval
# (the epoch is 142 steps: no epoch ends in the run), and none without.
"$MKDATA" synth long.h5 2000 12 3 11
LONG=(--device cpu --data long.h5 --eval-data none --layers 16,8 --batch 14 --seed 5 --steps 20 --keep 100)
MTRAIN_TEST_FAULT=pause:1:10 ranks 2 "${LONG[@]}" --ckpt-every-min 0.02 --ckpt-dir timed --metrics timed.jsonl >log ||
	{ cat log; fail "the run with --ckpt-every-min"; }
[ -f timed/ckpt-00000011.h5 ] || { ls timed; fail "no checkpoint at step 11, after the pause (--ckpt-every-min 0.02)"; }
grep -q '"event":"checkpoint","step":11,' timed.jsonl || fail "no checkpoint event at step 11 in the metrics"
[ -f timed/ckpt-00000020.h5 ] || fail "no checkpoint at the end of the timed run"
MTRAIN_TEST_FAULT=pause:1:10 ranks 2 "${LONG[@]}" --ckpt-dir untimed >log || { cat log; fail "the run without"; }
[ ! -f untimed/ckpt-00000011.h5 ] || fail "a checkpoint at step 11 without --ckpt-every-min"
