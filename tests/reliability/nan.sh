# NaN or Inf in the gradients: every rank skips the step alike (weights,
# slots, shadows, step and position untouched), says so, records it in the
# metrics and retries it. A transient fault leaves the run as if it never
# happened; a persistent one stops the job after --max-bad-steps in a row
# with one line and exit 1, the newest checkpoint intact.
. "$(dirname "$0")/../mpi/lib.sh"

# A transient fault (MTRAIN_TEST_FAULT=nangrad:0:7): a NaN in one rank's
# summed gradients at step 7's first attempt only, after the reduction:
# rank 0's sums with whole replicas, the last shard's owner (rank 2) under
# ZeRO-1, so the other ranks skip only if the ranks agree. 20 steps of 6 an
# epoch end bitwise as the run without the fault, at the same step and
# data position.
make_data
position() { "$MTRAIN" inspect "$1" --json | python3 -c '
import json, sys
m = json.load(sys.stdin)
print(m["global_step"], m["epoch"], m["step_in_epoch"])'; }
for z in 0 1; do
	ranks 3 "${SMALL[@]}" --zero $z --steps 20 --ckpt-dir clean$z >/dev/null
	MTRAIN_TEST_FAULT=nangrad:0:7 expect_status 0 ranks 3 "${SMALL[@]}" --zero $z --steps 20 \
		--ckpt-dir fault$z --metrics t$z.jsonl
	for r in 0 1 2; do
		prefix="rank $r: "
		[ $r = 0 ] && prefix=
		[ "$(grep -c "^${prefix}step 7: gradients hold NaN or Inf.*skipped, 1 in a row" last.out)" = 1 ] ||
			{ cat last.out; fail "--zero $z: rank $r did not say once that it skipped step 7"; }
	done
	[ "$(grep -c 'gradients hold NaN' last.out)" = 3 ] || { cat last.out; fail "--zero $z: want 3 skip lines"; }
	same_ckpt clean$z/ckpt-00000020.h5 fault$z/ckpt-00000020.h5
	[ "$(position clean$z/ckpt-00000020.h5)" = "20 3 2" ] || fail "the unfaulted run's position"
	[ "$(position fault$z/ckpt-00000020.h5)" = "20 3 2" ] ||
		fail "--zero $z: step and position after the skip: $(position fault$z/ckpt-00000020.h5)"
	python3 - t$z.jsonl <<'PY' || fail "--zero $z: metrics"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
skips = [(l["step"], l["in_a_row"]) for l in lines if l["event"] == "skip"]
assert skips == [(7, 1)], skips
assert lines[-1]["event"] == "end" and lines[-1]["reason"] == "done" and lines[-1]["skipped"] == 1, lines[-1]
PY
done

# A persistent fault: one rank's data overflows.
# 14 rows, one global batch of 14 an epoch: on 2 ranks the bad row is in
# one rank's half of every batch.
"$MKDATA" synth clean.h5 14 12 3 11
"$MKDATA" overflow clean.h5 bad.h5 9
FLAGS=(--device cpu --eval-data none --layers 16,8 --batch 14 --seed 5 --log-every 1)
# Whole replicas (--zero 0) and ZeRO-1 (each rank checks its shard of the
# sums, the ranks agree) decide alike.
for z in 0 1; do
	ranks 2 "${FLAGS[@]}" --zero $z --data clean.h5 --steps 4 --ckpt-every 2 --ckpt-dir z$z >/dev/null
	cp z$z/ckpt-00000004.h5 four.h5
	expect_status 1 ranks 2 "${FLAGS[@]}" --zero $z --data bad.h5 --steps 8 --ckpt-dir z$z --metrics m$z.jsonl \
		--max-bad-steps 3
	grep -c "^step 5: gradients hold NaN or Inf" last.out | grep -qx 3 || { cat last.out; fail "want 3 skips of step 5"; }
	grep -c "^rank 1: step 5: gradients hold NaN or Inf" last.out | grep -qx 3 || { cat last.out; fail "rank 1: want 3 skips"; }
	[ "$(grep -c '^mtrain: error' last.err)" = 1 ] || { cat last.err; fail "want one error line"; }
	grep -q "3 steps in a row at step 5 had NaN or Inf gradients (--max-bad-steps); stopping, the newest checkpoint, step 4, is intact" \
		last.err || { cat last.err; fail "the stop line"; }
	same_ckpt four.h5 z$z/ckpt-00000004.h5
	[ "$(ls z$z | tail -n 1)" = ckpt-00000004.h5 ] || { ls z$z; fail "a checkpoint was written after the NaN"; }
	python3 - m$z.jsonl <<'PY' || fail "metrics"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
skips = [l for l in lines if l["event"] == "skip"]
assert [(l["step"], l["in_a_row"]) for l in skips] == [(5, 1), (5, 2), (5, 3)], skips
assert lines[-1]["event"] == "end" and lines[-1]["reason"] == "nan" and lines[-1]["skipped"] == 3, lines[-1]
assert not any(l["event"] == "train" for l in lines), lines
PY
done
# The same data on 1 rank: the bad row is that rank's; the same decision.
expect_status 1 ranks 1 "${FLAGS[@]}" --data bad.h5 --steps 8 --ckpt-dir ck1 --max-bad-steps 2
grep -q "2 steps in a row at step 1 had NaN or Inf gradients" last.err || { cat last.err; fail "1 rank"; }
pass "NaN/Inf gradients: a transient one on one rank skipped by every rank and retried, bitwise as without it (--zero 0 and 1, 3 ranks); a persistent one stopped after 3, checkpoint intact"
