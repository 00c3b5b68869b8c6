# mtrain export --format keras: a real Keras 3 opens the .keras file with no
# code of ours. The jobs/fmnist-cnn.conf CNN trained 300 steps on 2 ranks,
# exported raw and EMA: keras.saving.load_model rebuilds it, model.summary()
# names the layers as mtrain inspect does, and its accuracy on the 10,000
# Fashion-MNIST test images is what `mtrain eval` prints, within 5 images
# (the convolutions sum in another order). --format keras-weights loads into
# the same model built in Keras by hand. A residual network (blocks with
# Add, a strided 'same' convolution, a 1x1 shortcut, global pooling) and
# the default job's MLP (gelu; a flat input), and a model ending in relu
# (a softmax added) too.
# A model Keras cannot express, and bad flags: one line, exit 2, no file.
. "$(dirname "$0")/../mpi/lib.sh"
need_keras
src=/usr/share/datasets/fashion-mnist
"$MTRAIN" import --images $src/train-images-idx3-ubyte.gz --labels $src/train-labels-idx1-ubyte.gz --out train.h5 >/dev/null
"$MTRAIN" import --images $src/t10k-images-idx3-ubyte.gz --labels $src/t10k-labels-idx1-ubyte.gz --out test.h5 >/dev/null
conf=$(dirname "$0")/../../jobs/fmnist-cnn.conf
ranks 2 --config "$conf" --data train.h5 --eval-data test.h5 --steps 300 --ckpt-dir ck >/dev/null
ck=ck/ckpt-00000300.h5
"$MTRAIN" export $ck --format keras --out raw.keras >/dev/null
"$MTRAIN" export $ck --format keras --weights ema --out ema.keras >/dev/null
"$MTRAIN" export $ck --format keras-weights --weights ema --out ema.weights.h5 >/dev/null
ranks 2 eval --ckpt $ck --weights both --device cpu >eval.txt
"$MTRAIN" inspect $ck >inspect.txt
# The layer names of inspect's model section (its first column).
sed -n '/^model (/,/ layers on input/p' inspect.txt | sed '1,2d;$d' | awk '{print $1}' >names.txt
[ "$(wc -l <names.txt)" = 13 ] || { cat inspect.txt; fail "inspect shows no 13-layer model"; }

# check_keras MODEL.keras EVAL_LINE_WORD: Keras' accuracy on test.h5 against
# mtrain eval's figure for those weights, and its layer names.
check_keras() {
	local loss acc
	read -r loss acc < <(sed -n "s/.* $2 loss \([0-9.]*\) acc \([0-9.]*\) .*/\1 \2/p" eval.txt)
	[ -n "$acc" ] || { cat eval.txt; fail "no $2 figures from mtrain eval"; }
	"$KPY" - "$1" test.h5 "$acc" names.txt "$loss" <<'PY' || fail "Keras on $1"
import io, sys, contextlib
import h5py, keras, numpy as np
path, test, want, names, want_loss = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], float(sys.argv[5])
m = keras.saving.load_model(path)
text = io.StringIO()
with contextlib.redirect_stdout(text):
    m.summary(line_length=120)
shown = [l.name for l in m.layers[1:]]
mtrain_names = open(names).read().split()
assert shown == mtrain_names, (shown, mtrain_names)
assert all(n in text.getvalue() for n in mtrain_names)
kinds = [type(l).__name__ for l in m.layers[1:]]
assert kinds == ["Conv2D", "BatchNormalization", "Activation", "MaxPooling2D", "Conv2D",
                 "BatchNormalization", "Activation", "MaxPooling2D", "Flatten", "Dense",
                 "Activation", "Dropout", "Dense"], kinds
bn = m.get_layer("batch_normalization")
assert abs(bn.momentum - 0.99) < 1e-9 and abs(bn.epsilon - 1e-3) < 1e-12, (bn.momentum, bn.epsilon)
with h5py.File(test, "r") as f:
    x = f["x"][()].astype(np.float32).reshape(-1, 28, 28, 1) * np.float32(1 / 255)
    y = f["y"][()]
p = m.predict(x, batch_size=1000, verbose=0)
assert np.allclose(p.sum(1), 1, atol=1e-4), "the output is not probabilities"
acc = float((p.argmax(1) == y).mean())
loss = float(-np.log(p[np.arange(len(y)), y].astype(np.float64)).mean())
print(f"{path}: Keras accuracy {acc:.4f} loss {loss:.4f}, mtrain eval {want:.4f} {want_loss:.4f}")
assert abs(acc - want) <= 5 / 10000 + 1e-9, (acc, want)
assert abs(loss - want_loss) <= 5e-4, (loss, want_loss)
PY
}
check_keras raw.keras raw
check_keras ema.keras ema
read -r ema_acc < <(sed -n 's/.* ema loss [0-9.]* acc \([0-9.]*\) .*/\1/p' eval.txt)

# --format keras-weights: into the model a Keras user builds with the same
# layers (Keras' own names), by model.load_weights.
"$KPY" - ema.weights.h5 test.h5 "$ema_acc" <<'PY' || fail "keras-weights"
import sys
import h5py, keras, numpy as np
from keras import layers as L
path, test, want = sys.argv[1], sys.argv[2], float(sys.argv[3])
m = keras.Sequential([keras.Input((28, 28, 1)), L.Conv2D(32, 3, padding="same"),
    L.BatchNormalization(), L.Activation("relu"), L.MaxPooling2D(2), L.Conv2D(64, 3, padding="same"),
    L.BatchNormalization(), L.Activation("relu"), L.MaxPooling2D(2), L.Flatten(), L.Dense(128),
    L.Activation("relu"), L.Dropout(0.3), L.Dense(10, activation="softmax")])
m.load_weights(path)
with h5py.File(test, "r") as f:
    x = f["x"][()].astype(np.float32).reshape(-1, 28, 28, 1) * np.float32(1 / 255)
    y = f["y"][()]
acc = float((m.predict(x, batch_size=1000, verbose=0).argmax(1) == y).mean())
print(f"{path}: model.load_weights accuracy {acc:.4f}, mtrain eval {want:.4f}")
assert abs(acc - want) <= 5 / 10000 + 1e-9, (acc, want)
PY

# A residual network: Keras' functional model with Add.
res="conv2d:8:3,batchnorm,relu,[conv2d:8:3,batchnorm,relu,conv2d:8:3,batchnorm],relu,"
res+="[conv2d:16:3:2,batchnorm,relu,conv2d:16:3,batchnorm|conv2d:16:1:2,batchnorm],relu,globalavgpool,dense"
ranks 2 --model "$res" --input-shape 28,28,1 --data train.h5 --eval-data test.h5 --steps 400 \
	--batch 64 --ckpt-dir rk >/dev/null
"$MTRAIN" export rk/ckpt-00000400.h5 --format keras --weights ema --out res.keras >/dev/null
ranks 2 eval --ckpt rk/ckpt-00000400.h5 --weights ema --device cpu >res_eval.txt
read -r loss want < <(sed -n 's/.* ema loss \([0-9.]*\) acc \([0-9.]*\) .*/\1 \2/p' res_eval.txt)
"$KPY" - res.keras test.h5 "$want" "$loss" <<'PY' || fail "residual network in Keras"
import sys
import h5py, keras, numpy as np
path, test, want, want_loss = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
m = keras.saving.load_model(path)
adds = [l for l in m.layers if type(l).__name__ == "Add"]
assert [l.name for l in adds] == ["add", "add_1"], [l.name for l in adds]
# add_1 takes the main path's last batch norm and the shortcut's.
ins = [t._keras_history[0].name for t in adds[1].input]
assert ins == ["batch_normalization_4", "batch_normalization_5"], ins
with h5py.File(test, "r") as f:
    x = f["x"][()].astype(np.float32).reshape(-1, 28, 28, 1) * np.float32(1 / 255)
    y = f["y"][()]
p = m.predict(x, batch_size=1000, verbose=0)
acc = float((p.argmax(1) == y).mean())
loss = float(-np.log(p[np.arange(len(y)), y].astype(np.float64)).mean())
print(f"{path}: Keras accuracy {acc:.4f} loss {loss:.4f}, mtrain eval {want:.4f} {want_loss:.4f}")
assert abs(acc - want) <= 5 / 10000 + 1e-9, (acc, want)
assert abs(loss - want_loss) <= 5e-4, (loss, want_loss)
PY

# The default job's MLP on the 28x28x1 images: Keras' input is the flat
# row, as mtrain's dense reads it.
ranks 2 --data train.h5 --eval-data test.h5 --steps 100 --activation gelu --ckpt-dir mk >/dev/null
"$MTRAIN" export mk/ckpt-00000100.h5 --format keras --out mlp.keras >/dev/null
ranks 2 eval --ckpt mk/ckpt-00000100.h5 --weights raw --device cpu >mlp_eval.txt
read -r loss want < <(sed -n 's/.* raw loss \([0-9.]*\) acc \([0-9.]*\) .*/\1 \2/p' mlp_eval.txt)
"$KPY" - mlp.keras test.h5 "$want" "$loss" <<'PY' || fail "the default MLP in Keras"
import sys
import h5py, keras, numpy as np
path, test, want, want_loss = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
m = keras.saving.load_model(path)
assert m.input_shape == (None, 784), m.input_shape
assert [l.name for l in m.layers[1:]] == ["dense", "activation", "dense_1", "activation_1", "dense_2"]
assert m.get_layer("activation").get_config()["activation"] == "gelu"
with h5py.File(test, "r") as f:
    x = f["x"][()].astype(np.float32).reshape(-1, 784) * np.float32(1 / 255)
    y = f["y"][()]
p = m.predict(x, batch_size=1000, verbose=0)
acc = float((p.argmax(1) == y).mean())
loss = float(-np.log(p[np.arange(len(y)), y].astype(np.float64)).mean())
print(f"{path}: Keras accuracy {acc:.4f} loss {loss:.4f}, mtrain eval {want:.4f} {want_loss:.4f}")
assert abs(acc - want) <= 5 / 10000 + 1e-9, (acc, want)
assert abs(loss - want_loss) <= 5e-4, (loss, want_loss)
PY

# A model whose last layer is not a dense: Keras' model gives probabilities
# still (an Activation "softmax" after it), its loss mtrain's.
ranks 1 --model flatten,dense,relu --input-shape 28,28,1 --data train.h5 --steps 20 --ckpt-dir rl \
	--device cpu >/dev/null
"$MTRAIN" export rl/ckpt-00000020.h5 --format keras --out relu.keras >/dev/null
ranks 1 eval --ckpt rl/ckpt-00000020.h5 --eval-data test.h5 --weights raw --device cpu >relu_eval.txt
read -r loss want < <(sed -n 's/.* raw loss \([0-9.]*\) acc \([0-9.]*\) .*/\1 \2/p' relu_eval.txt)
"$KPY" - relu.keras test.h5 "$want" "$loss" <<'PY' || fail "a relu-ended model in Keras"
import sys
import h5py, keras, numpy as np
path, test, want, want_loss = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
m = keras.saving.load_model(path)
assert [l.name for l in m.layers] == ["input_layer", "flatten", "dense", "activation", "softmax"]
with h5py.File(test, "r") as f:
    x = f["x"][()].astype(np.float32).reshape(-1, 784) * np.float32(1 / 255)
    y = f["y"][()]
p = m.predict(x, batch_size=1000, verbose=0)
assert np.allclose(p.sum(1), 1, atol=1e-4), "the output is not probabilities"
acc = float((p.argmax(1) == y).mean())
loss = float(-np.log(p[np.arange(len(y)), y].astype(np.float64)).mean())
print(f"{path}: Keras accuracy {acc:.4f} loss {loss:.4f}, mtrain eval {want:.4f} {want_loss:.4f}")
assert abs(acc - want) <= 5 / 10000 + 1e-9 and abs(loss - want_loss) <= 5e-4, (acc, loss)
PY

# What Keras cannot express as mtrain computes it: a dense on a conv2d's
# output (mtrain flattens it, Keras' Dense would work at each pixel).
ranks 1 --model conv2d:4:3,dense --input-shape 28,28,1 --data train.h5 --steps 1 --ckpt-dir dk \
	--device cpu >/dev/null
expect_error "layer 2 \(dense, dense\) takes a 28x28x4 image, where Keras' Dense would apply at each position" \
	"$MTRAIN" export dk/ckpt-00000001.h5 --format keras --out bad.keras
expect_error "--format: 'onnx' is not one of safetensors.keras.keras-weights" \
	"$MTRAIN" export $ck --format onnx --out bad.keras
expect_error "nowhere/x.keras: cannot write" "$MTRAIN" export $ck --format keras --out nowhere/x.keras
# Names Keras would not open: load_model wants .keras, load_weights .weights.h5.
expect_error "--out model.zip: Keras opens only a file whose name ends in .keras" \
	"$MTRAIN" export $ck --format keras --out model.zip
expect_error "--out model.h5: Keras opens only a file whose name ends in .weights.h5" \
	"$MTRAIN" export $ck --format keras-weights --out model.h5
cp $ck same.weights.h5
expect_error "is the checkpoint being exported" "$MTRAIN" export same.weights.h5 --format keras-weights \
	--out same.weights.h5
"$MTRAIN" inspect same.weights.h5 >/dev/null || fail "export over the checkpoint damaged it"
[ "$(ls ./*.keras* ./*.h5* | sort | tr '\n' ' ')" = "./ema.keras ./ema.weights.h5 ./mlp.keras ./raw.keras ./relu.keras ./res.keras ./same.weights.h5 ./test.h5 ./train.h5 " ] ||
	fail "bad exports left files: $(ls)"
pass "keras export: load_model rebuilds the CNN, a ResNet and the MLP with mtrain's names and accuracy; load_weights too"
