# --timeline: a Chrome trace (JSON) with one track per rank; the steps of
# --timeline-steps only; a span for every phase (data, forward, backward,
# each all-reduce, the wait for them, optimizer, EMA update and sync,
# evaluation, checkpoint); within a rank, spans nest or follow each other,
# never overlap.
. "$(dirname "$0")/lib.sh"
make_data
# Steps 3..6 of 12 (step N makes global_step N): step 6 ends the first
# epoch (evaluation and checkpoint); steps 3 and 6 sync the EMA (every 3).
# ZeRO 0 all-reduces the gradients; ZeRO 1 reduce-scatters them and
# all-gathers the weights.
for zero in 0 1; do
rm -rf ck
ranks 3 "${SMALL[@]}" --steps 12 --ckpt-dir ck --ema-sync-every 3 --timeline t.json \
	--timeline-steps 3:6 --zero $zero >log
grep -q "^timeline t.json" log || fail "no timeline line"
python3 - t.json $zero <<'PY' || fail "timeline (--zero $zero)"
import json, sys
trace = json.load(open(sys.argv[1]))
zero = sys.argv[2] == "1"
spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
names = sorted(e["args"]["name"] for e in trace["traceEvents"]
               if e["ph"] == "M" and e["name"] == "process_name")
assert [n.split(" (")[0] for n in names] == ["rank 0", "rank 1", "rank 2"], names
for rank in range(3):
    mine = sorted((e for e in spans if e["pid"] == rank), key=lambda e: (e["ts"], -e["dur"]))
    steps = sorted({e["args"]["step"] for e in mine})
    assert steps == [3, 4, 5, 6], (rank, steps)
    phases = {e["name"] for e in mine}
    want = {"step", "data", "forward", "backward", "optimizer",
            "ema update", "ema sync", "evaluation", "checkpoint"}
    want |= ({"reduce-scatter wait", "reduce-scatter", "all-gather wait", "all-gather"}
             if zero else {"allreduce wait", "allreduce"})
    assert want <= phases, (rank, want - phases)
    # Nest or follow: a stack of open spans, each new one inside the top.
    stack = []
    for e in mine:
        start, end = e["ts"], e["ts"] + e["dur"]
        while stack and stack[-1][1] <= start + 0.002:
            stack.pop()
        assert not stack or end <= stack[-1][1] + 0.002, (rank, e, stack[-1])
        stack.append((start, end, e["name"]))
    for s in steps:
        step = [e for e in mine if e["name"] == "step" and e["args"]["step"] == s]
        assert len(step) == 1, (rank, s)
        inner = [e for e in mine if e["args"]["step"] == s and e["name"] not in
                 ("step", "evaluation", "checkpoint")]
        lo, hi = step[0]["ts"], step[0]["ts"] + step[0]["dur"]
        assert all(lo - 0.002 <= e["ts"] and e["ts"] + e["dur"] <= hi + 0.002 for e in inner), (rank, s)
print(len(spans), "spans on 3 ranks")
PY
done
expect_status 2 "$MTRAIN" "${SMALL[@]}" --steps 2 --ckpt-dir bad --timeline x.json --timeline-steps 5:2
grep -q -- "--timeline-steps: '5:2' is not A:B" last.err || fail "bad --timeline-steps: $(cat last.err)"
expect_status 2 "$MTRAIN" "${SMALL[@]}" --steps 2 --ckpt-dir bad --timeline nowhere/t.json
grep -q -- "--timeline nowhere/t.json: cannot create it in nowhere" last.err || fail "$(cat last.err)"
[ ! -e bad ] || fail "a refused --timeline left --ckpt-dir behind"
# Never over a file the run reads or writes, nor among the checkpoints.
expect_status 2 "$MTRAIN" "${SMALL[@]}" --steps 2 --ckpt-dir bad --timeline train.h5
grep -q -- "--timeline train.h5: is also --data" last.err || fail "$(cat last.err)"
expect_status 2 "$MTRAIN" "${SMALL[@]}" --steps 2 --ckpt-dir ck --timeline ck/t.json
grep -q -- "is in --ckpt-dir ck" last.err || fail "$(cat last.err)"
"$MKDATA" synth check.h5 84 12 3 11
h5diff -q train.h5 check.h5 || fail "a refused --timeline changed the training set"
pass "timeline: 3 ranks, steps 3-6, every phase, spans nest"
