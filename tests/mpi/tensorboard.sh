# --tensorboard: TensorBoard's own reader (the event accumulator) finds the
# training and evaluation scalars at the steps and values of the metrics
# file. A resumed run appends a new event file to the folder and, though it
# logs steps the first run had logged past its checkpoint again, the reader
# sees each step once. An elastic restart (--restart) adds one scalar at
# the step it resumes from.
. "$(dirname "$0")/lib.sh"
need_python tensorboard
make_data
# 6 steps an epoch: checkpoints at 6 and 12, progress lines at 5, 10, 12.
ranks 2 "${SMALL[@]}" --steps 12 --ckpt-dir ck --metrics m.jsonl --tensorboard tb >/dev/null
[ "$(ls tb | grep -c '^events.out.tfevents\.')" = 1 ] || fail "want one event file: $(ls tb)"
# The run 'dies' after step 12 before its checkpoint there: the next one
# resumes at 6 and logs 10 and 12 again, then 15 and 18.
rm ck/ckpt-00000012.h5
sleep 1 # a new file name (seconds in it)
# It is an elastic job's restart too (jobs/elastic.sh's flags): one scalar.
ranks 2 "${SMALL[@]}" --steps 18 --ckpt-dir ck --metrics m.jsonl --tensorboard tb \
	--restart 1 --restart-lost node9 >log
grep -q "resumed from ck/ckpt-00000006.h5" log || fail "the second run did not resume at 6"
grep -qx "restart 1: lost node9; resuming on 1 node (2 ranks) from step 6" log || { cat log; fail "the restart line"; }
grep -qx '{"event":"restart","step":6,"restart":1,"lost":"node9","ranks":2,"nodes":1}' m.jsonl ||
	fail "the restart event"
[ "$(ls tb | grep -c '^events.out.tfevents\.')" = 2 ] || fail "want two event files: $(ls tb)"
"$PY" - tb m.jsonl <<'PY' || fail "TensorBoard scalars"
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1])
acc.Reload()
tags = sorted(acc.Tags()["scalars"])
want_tags = sorted(["train/loss", "train/lr", "train/samples_per_s", "eval/raw_loss",
                    "eval/raw_acc", "eval/ema_loss", "eval/ema_acc", "elastic/restarts"])
assert tags == want_tags, tags
# The metrics file as a reader should see it: a run that starts at step s
# (a resume) replaces what earlier runs logged past s.
metrics = {}
for line in open(sys.argv[2]):
    l = json.loads(line)
    if l["event"] == "start":
        metrics = {k: v for k, v in metrics.items() if k[1] <= l["step"]}
    elif l["event"] == "train":
        for k in ("loss", "lr", "samples_per_s"):
            metrics[("train/" + k, l["step"])] = l[k]
    elif l["event"] == "eval":
        for k in ("raw_loss", "raw_acc", "ema_loss", "ema_acc"):
            metrics[("eval/" + k, l["step"])] = l[k]
restarts = [(e.step, e.value) for e in acc.Scalars("elastic/restarts")]
assert restarts == [(6, 1.0)], restarts
for tag in tags:
    if tag == "elastic/restarts":
        continue
    events = acc.Scalars(tag)
    steps = [e.step for e in events]
    want = sorted(s for (t, s) in metrics if t == tag)
    assert steps == want, (tag, steps, want)  # each step once, in order
    for e in events:
        m = metrics[(tag, e.step)]
        assert abs(e.value - m) <= 1e-6 * max(1.0, abs(m)), (tag, e.step, e.value, m)
print("tags", len(tags), "train/loss steps", [e.step for e in acc.Scalars("train/loss")])
PY
# A fresh run (--resume never) in the same folder supersedes both earlier
# files: the reader shows its steps only, each once.
ranks 2 "${SMALL[@]}" --steps 8 --resume never --ckpt-dir fresh --tensorboard tb >/dev/null
"$PY" - tb <<'PY' || fail "a fresh run in a used folder"
import sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1])
acc.Reload()
steps = [e.step for e in acc.Scalars("train/loss")]
assert steps == [5, 8], steps
PY
# A live TensorBoard sees a running job: what was logged up to a checkpoint
# (and each evaluation) is in the file while the job goes on. The job waits
# after step 21 (a test fault: alive, logging nothing), so only the flushes
# at the checkpoint at 20 and the evaluation at 18 can have written those
# steps; it is then killed without a chance to flush again.
MTRAIN_TEST_FAULT=hang:0:21 "$MTRAIN" "${SMALL[@]}" --steps 1000 --ckpt-every 10 --ckpt-dir live \
	--tensorboard tblive >live.log 2>&1 &
job=$!
written() { grep -q "^checkpoint live/ckpt-00000020.h5" live.log; }
for _ in $(seq 300); do written && break; sleep 0.1; done
written || { kill -9 $job; cat live.log; fail "the live run wrote no checkpoint at 20"; }
"$PY" - tblive <<'PY' || { kill -9 $job; fail "scalars not readable while the job runs"; }
import sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1])
acc.Reload()
train = [e.step for e in acc.Scalars("train/loss")]
evals = [e.step for e in acc.Scalars("eval/ema_acc")]
assert train == [5, 10, 15, 20], train
assert evals == [6, 12, 18], evals
PY
kill -0 $job || fail "the live run ended before its scalars were read"
kill -9 $job
wait $job 2>/dev/null || true
# A --tensorboard that cannot be a folder: one line, exit 2, nothing written.
touch afile
expect_status 2 "$MTRAIN" "${SMALL[@]}" --steps 2 --ckpt-dir new --tensorboard afile
grep -q -- "--tensorboard afile: exists and is not a folder" last.err || fail "$(cat last.err)"
[ ! -e new ] || fail "a refused --tensorboard left --ckpt-dir behind"
pass "TensorBoard: 7 tags at the metrics file's steps and values, each step once across a resume; readable while the job runs"
