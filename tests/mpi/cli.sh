# The command line: --help documents every option, --version, and the
# import / inspect / eval subcommands on a real run.
. "$(dirname "$0")/lib.sh"
make_data
"$MTRAIN" --help >help.txt
for flag in data eval-data layers activation optimizer lr batch epochs steps seed ema-decay \
	ema-num-updates ema-sync-every ckpt-dir ckpt-every keep resume log-every metrics device config; do
	grep -q -- "--$flag " help.txt || fail "--help does not document --$flag"
done
# Defaults as a user writes them: the shortest text of the float (not 0.00100000005).
grep -Eq -- '^  --lr X +peak learning rate \[default: 0\.001\]$' help.txt ||
	{ grep -- '--lr ' help.txt; fail "--help: --lr's default is not written 0.001"; }
"$MTRAIN" --version | grep -Eq '^mtrain [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version"
# --help pictures the model the options describe, as Keras' summary does:
# ResNet-20's projection shortcut indented in its block, taking the block's
# input, its add taking both paths, and the totals.
"$MTRAIN" --config "$(dirname "$0")/../../jobs/fmnist-resnet.conf" --help >resnet.txt
grep -Eq '^  conv2d_9 +conv2d:32:1:2:same +14x14x32 +544  activation_6$' resnet.txt ||
	{ cat resnet.txt; fail "--help: no conv2d_9, the first projection, in its block"; }
grep -Eq '^add_3 +add +14x14x32 +0  batch_normalization_8, batch_normalization_9$' resnet.txt ||
	fail "--help: add_3 does not take both paths"
grep -q '^72 layers on input 28x28x1, 10 classes; 274,538 parameters: 272,970 trainable, 1,568 not' \
	resnet.txt || fail "--help: ResNet-20's totals"
# Without --input-shape, for the default data's 28x28x1 images (a conv2d
# and a pool there, not on a 1x1 image).
"$MTRAIN" --help --model conv2d:8:3,relu,maxpool2d:2,flatten,dense >cnn.txt ||
	{ cat cnn.txt; fail "--help of a conv2d without --input-shape"; }
grep -Eq '^max_pooling2d +maxpool2d:2:2 +14x14x8 +0' cnn.txt &&
	grep -q '^5 layers on input 28x28x1, 10 classes; 15,770 parameters' cnn.txt ||
	{ cat cnn.txt; fail "--help: a conv2d's model not laid out on 28x28x1"; }
ranks 2 "${SMALL[@]}" --steps 12 --ckpt-dir ck --metrics m.jsonl >log
# The metrics file is JSON lines: start, train (steps 5, 10, 12, with lr),
# eval (with epoch), checkpoint, end; a path with a quote stays valid JSON.
ranks 2 "${SMALL[@]}" --steps 2 --ckpt-dir 'odd"dir' --metrics m2.jsonl >/dev/null
# A diverged run: its NaN gradients are skipped (reliability.nan has the
# details) until it stops with exit 1; its metrics stay strict JSON.
expect_status 1 "$MTRAIN" "${SMALL[@]}" --layers 256,256 --optimizer momentum --lr 100 --steps 6 \
	--ckpt-dir nan --metrics m3.jsonl
python3 - m.jsonl m2.jsonl m3.jsonl <<'PY' || fail "metrics file"
import json, sys
def strict(line):
    def no_constant(name):
        raise ValueError("bare " + name + " in " + line)
    return json.loads(line, parse_constant=no_constant)
lines = [strict(l) for l in open(sys.argv[1])]
diverged = [strict(l) for l in open(sys.argv[3])]
assert diverged[-1]["event"] == "end" and diverged[-1]["reason"] == "nan", diverged[-1]
kinds = [l["event"] for l in lines]
assert kinds[0] == "start" and kinds[-1] == "end", kinds
assert lines[0]["ranks"] == 2 and lines[0]["total_steps"] == 12 and lines[-1]["reason"] == "done"
train = [l for l in lines if l["event"] == "train"]
assert [l["step"] for l in train] == [5, 10, 12], train
assert all(l["lr"] == 0.001 for l in train), train
assert all("epoch" in l for l in lines if l["event"] == "eval"), lines
odd = [strict(l) for l in open(sys.argv[2])]
assert any(l.get("path") == 'odd"dir/ckpt-00000002.h5' for l in odd), odd
PY
# A folder name that is not UTF-8 (byte 0xe9): the metrics file, inspect
# --json and an export's metadata (the config names the folder) stay
# valid UTF-8 JSON, the byte written as \u00e9.
ranks 2 "${SMALL[@]}" --steps 6 --ckpt-dir $'latin\xe9' --metrics m4.jsonl >/dev/null
"$MTRAIN" inspect $'latin\xe9/ckpt-00000006.h5' --json >latin.json
"$MTRAIN" export $'latin\xe9/ckpt-00000006.h5' --out latin.safetensors >/dev/null
python3 - m4.jsonl latin.json latin.safetensors <<'PY' || fail "JSON of a path that is not UTF-8"
import json, struct, sys
lines = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert lines[-2]["path"] == "latin\u00e9/ckpt-00000006.h5", lines[-2]
d = json.load(open(sys.argv[2], encoding="utf-8"))
assert d["file"] == "latin\u00e9/ckpt-00000006.h5", d["file"]
raw = open(sys.argv[3], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n].decode("utf-8"))
assert "ckpt-dir = latin\u00e9" in header["__metadata__"]["config"]
PY
grep -Eq '^step 5/12 epoch 1 loss [0-9.]+ lr 1.000e-03 samples/s [0-9]+ eta [0-9]+s$' log ||
	{ cat log; fail "progress line format"; }
grep -Eq '^eval step 6 epoch 1 raw_loss [0-9.]+ raw_acc [0-9.]+ ema_loss [0-9.]+ ema_acc [0-9.]+$' log ||
	fail "eval line format"
"$MTRAIN" inspect ck/ckpt-00000012.h5 >inspect.txt
grep -Eq '^dense/kernel +\[12,16\] +float32 +[0-9a-f]{16}' inspect.txt || fail "inspect line"
# --json: the same facts for scripts, as strict JSON (either order).
"$MTRAIN" inspect --json ck/ckpt-00000012.h5 >inspect.json
python3 - inspect.json inspect.txt <<'PY' || fail "inspect --json"
import json, sys
d = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read().split("\n")
assert d["format"] == "mtrain-checkpoint" and d["global_step"] == 12 and d["batch"] == 14, d
assert d["seed"] == 5 and d["world_size"] == 2 and "lr = " in d["config"], d
rows = {l.split()[0]: l.split() for l in text if l.count(" ") > 4}
assert len(d["variables"]) == 24, len(d["variables"])
for v in d["variables"]:
    row = rows[v["name"]]
    assert row[1] == "[" + ",".join(map(str, v["shape"])) + "]" and row[3] == v["fnv1a64"], (v, row)
PY
ranks 2 eval --ckpt ck/ckpt-00000012.h5 --weights both --device cpu >eval.txt
grep -q "raw loss" eval.txt && grep -q "ema loss" eval.txt || fail "eval output"
# eval reports the losses and accuracies training logged at that step, the
# EMA's for the EMA (raw and EMA losses differ, so a swap would show).
read -r raw_loss raw_acc ema_loss ema_acc < <(awk '/^eval step 12 / {print $7, $9, $11, $13}' log)
[ "$raw_loss" != "$ema_loss" ] || fail "raw and EMA losses equal ($raw_loss): the check below is blind"
grep -q "raw loss $raw_loss acc $raw_acc " eval.txt && grep -q "ema loss $ema_loss acc $ema_acc " eval.txt ||
	{ cat log eval.txt; fail "eval disagrees with training"; }
expect_status 2 "$MTRAIN" inspect nothing.h5
# --keep: the newest 2 stay; --metrics may live in the --ckpt-dir this run creates.
ranks 2 "${SMALL[@]}" --steps 12 --ckpt-every 2 --keep 2 --ckpt-dir kept --metrics kept/m.jsonl >/dev/null
[ "$(ls kept | tr '\n' ' ')" = "ckpt-00000010.h5 ckpt-00000012.h5 m.jsonl " ] || { ls kept; fail "--keep 2"; }
# A fresh run in that folder keeps its own checkpoints and leaves the
# other run's later ones alone, with a warning.
"$MTRAIN" "${SMALL[@]}" --steps 4 --keep 1 --ckpt-dir kept --resume never >/dev/null 2>err
grep -q "holds kept/ckpt-00000012.h5 from another run" err || { cat err; fail "no warning"; }
[ "$(ls kept | tr '\n' ' ')" = "ckpt-00000004.h5 ckpt-00000010.h5 ckpt-00000012.h5 m.jsonl " ] ||
	{ ls kept; fail "pruning touched the other run or dropped this one's"; }
pass "help, version, inspect, eval"
