# A checkpoint is a model PyTorch can rebuild from the file alone:
# tests/tools/torch_rebuild.py reads the model description in its config,
# names the layers as Keras does (each kind counted in list order, a block's
# main path before its shortcut), takes every variable by that name (and
# every EMA shadow; a dataset left over or missing fails), evaluates the
# eval set with the raw and the EMA weights, and gets mtrain's own figures:
# the accuracy exactly, the loss within 1e-5 relative: both are float32,
# summed in another order, and the metrics file gives mtrain's to 7 digits
# (the rebuild agrees to all 7 here); 1e-4 would pass a rebuild with gelu's
# tanh approximation (4e-5 off) or uint8 scaled by 1/256 (1e-4). Three models
# on 2 ranks: a residual net (an identity block and a projection block, batch
# norm with each rank's own statistics, averaged into the checkpoint) on
# flat rows given --input-shape, a convolutional one with every other
# layer kind (valid and odd 'same' padding, both pools, flatten, gelu, silu,
# tanh, dropout, nested dense blocks) on uint8 images, and a small ViT on
# those images (patches, tokens, posembed, attention with a causal mask and
# dropout on its probabilities, layernorm of two epsilons, per-token dense,
# gelu_tanh, globalavgpool over the tokens).
REBUILD=$(cd "$(dirname "$0")/../tools" && pwd)/torch_rebuild.py # before lib.sh's cd
. "$(dirname "$0")/lib.sh"
need_python torch h5py numpy
RTOL=1e-5

# rebuilt CKPT EVAL_DATA METRICS: the rebuild of CKPT evaluates EVAL_DATA to
# the figures of the metrics file's eval line of CKPT's step.
rebuilt() {
	local ckpt=$1 data=$2 metrics=$3 step want
	step=$(basename "$ckpt" .h5)
	step=$((10#${step#ckpt-}))
	"$PY" "$REBUILD" "$ckpt" "$data" >rebuilt.out 2>rebuilt.err ||
		{ cat rebuilt.out rebuilt.err >&2; fail "no rebuild of $ckpt"; }
	want=$(grep '"event":"eval"' "$metrics" | grep "\"step\":$step," | tail -n 1)
	[ -n "$want" ] || fail "no eval line for step $step in $metrics"
	"$PY" - "$want" "$(cat rebuilt.out)" "$RTOL" <<'PY' || { cat rebuilt.err >&2; fail "$ckpt: the rebuild's figures are not mtrain's"; }
import json, sys
want, got, rtol = json.loads(sys.argv[1]), sys.argv[2].split(), float(sys.argv[3])
got = dict(zip(got[::2], got[1::2]))
assert sorted(got) == ["ema_acc", "ema_loss", "raw_acc", "raw_loss"], got
print("step %d: rebuild %s; mtrain %s" % (want["step"], " ".join("%s %s" % kv for kv in sorted(got.items())),
      " ".join("%s %.7g" % (k, want[k]) for k in sorted(got))))
for k in ("raw", "ema"):
    # The same rows right: the same ratio, as mtrain writes it (%.7g).
    assert got[k + "_acc"] == "%.7g" % want[k + "_acc"], (k, got[k + "_acc"], want[k + "_acc"])
    g, w = float(got[k + "_loss"]), want[k + "_loss"]
    assert abs(g - w) <= rtol * abs(w), (k, g, w, abs(g - w) / abs(w))
PY
}

# The residual net of resnet.sh (its identity block twice, N*(...)),
# without --sync-bn, evaluated on its training rows: make_data's eval.h5
# draws class centres of its own (another seed), on which any model scores
# about chance (0 or 2 rows of 30 right), too few for the accuracy to tell
# a wrong rebuild.
make_data
MODEL="conv2d:4:2,batchnorm,relu,2*([conv2d:4:2,batchnorm,relu,conv2d:4:2,batchnorm],relu),
	[conv2d:6:2:2,batchnorm,relu,conv2d:6:2,batchnorm|conv2d:6:1:2,batchnorm],relu,
	globalavgpool,dense"
ranks 2 --device cpu --data train.h5 --eval-data train.h5 --batch 12 --seed 5 --log-every 5 \
	--input-shape 2,2,3 --model "$MODEL" --optimizer momentum --nesterov on --lr 0.05 \
	--weight-decay 5e-4 --steps 20 --ckpt-dir res --metrics res.jsonl >res.log ||
	{ cat res.log; fail "the residual net"; }
# 6x6x2 uint8 images, a held-out slice of the training rows' distribution.
"$MKDATA" synth img.h5 114 72 3 21 u8
"$MKDATA" slice img.h5 rows_train.h5 0 84
"$MKDATA" slice img.h5 rows_eval.h5 84 30
"$MKDATA" reshape rows_train.h5 img_train.h5 6 6 2
"$MKDATA" reshape rows_eval.h5 img_eval.h5 6 6 2
CNN="conv2d:4:3,gelu,maxpool2d:2:1,conv2d:6:2:2,silu,avgpool2d:2:1,conv2d:5:1:1:valid,tanh,
	flatten,dense:8,[dense:8,relu,[dropout:0.2,dense:8]],relu,dropout:0.1,dense"
ranks 2 --device cpu --data img_train.h5 --eval-data img_eval.h5 --batch 12 --seed 5 \
	--log-every 5 --model "$CNN" --optimizer adam --lr 0.03 --steps 20 --ckpt-dir cnn \
	--metrics cnn.jsonl >cnn.log || { cat cnn.log; fail "the convolutional net"; }
VIT="conv2d:8:2:2:valid,tokens,posembed,[layernorm,attention:2:causal:0.2],
	[layernorm:1e-5,dense:12,gelu_tanh,dropout:0.1,dense:8],layernorm,globalavgpool,dense"
ranks 2 --device cpu --data img_train.h5 --eval-data img_eval.h5 --batch 12 --seed 5 \
	--log-every 5 --model "$VIT" --optimizer adamw --lr 0.01 --steps 20 --ckpt-dir vit \
	--metrics vit.jsonl >vit.log || { cat vit.log; fail "the ViT"; }
n=0
for run in res:train.h5 cnn:img_eval.h5 vit:img_eval.h5; do
	dir=${run%%:*}
	ls $dir/ckpt-*.h5 >/dev/null 2>&1 || fail "$dir: no checkpoints"
	for ck in $dir/ckpt-*.h5; do
		rebuilt "$ck" "${run#*:}" $dir.jsonl
		n=$((n + 1))
	done
	# The EMA's figures are not the raw ones: taking one for the other fails.
	grep '"event":"eval"' $dir.jsonl | tail -n 1 | "$PY" -c '
import json, sys
e = json.load(sys.stdin)
assert abs(e["raw_loss"] - e["ema_loss"]) > 1e-3 * e["raw_loss"], e' || fail "$dir: EMA = raw"
done
[ $n = 9 ] || fail "$n checkpoints, not 3 of each run"
pass "PyTorch rebuilds of $n checkpoints from their names evaluate to mtrain's figures"
