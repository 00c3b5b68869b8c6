# NaN or Inf in the gradients, from one rank's data: every rank skips the
# step alike (weights, slots, shadows, step and position untouched), logs
# it and records it in the metrics, retries it, and after --max-bad-steps
# in a row stops with one line and exit 1, the newest checkpoint intact.
. "$(dirname "$0")/../mpi/lib.sh"
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
	[ "$(grep -c '^mtrain: error' last.err)" = 1 ] || { cat last.err; fail "want one error line"; }
	grep -q "3 steps in a row at step 5 had NaN or Inf gradients (--max-bad-steps); stopping, the newest checkpoint (step 4) is intact" \
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
pass "NaN/Inf gradients from one rank's row: skipped on every rank, retried, stopped after 3, checkpoint intact"
