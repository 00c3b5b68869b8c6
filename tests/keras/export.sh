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
. "$(dirname "$0")/lib.sh"
import_fmnist
conf=$here/../../jobs/fmnist-cnn.conf
ranks 2 --config "$conf" --data train.h5 --eval-data test.h5 --steps 300 --ckpt-dir ck >/dev/null
ck=ck/ckpt-00000300.h5
export_all $ck 13

# The CNN, raw and EMA: Keras' figures are mtrain eval's; its layers are
# named as inspect names them, of Keras' classes, batch norm Keras' own.
keras <<'PY' || fail "the CNN in Keras"
import keras
from agree import agree, eval_figures
names = open("names.txt").read().split()
for which in ["raw", "ema"]:
    m = keras.saving.load_model(which + ".keras")
    shown = [l.name for l in m.layers[1:]]
    assert shown == names, (shown, names)
    kinds = [type(l).__name__ for l in m.layers[1:]]
    assert kinds == ["Conv2D", "BatchNormalization", "Activation", "MaxPooling2D", "Conv2D",
                     "BatchNormalization", "Activation", "MaxPooling2D", "Flatten", "Dense",
                     "Activation", "Dropout", "Dense"], kinds
    bn = m.get_layer("batch_normalization")
    assert abs(bn.momentum - 0.99) < 1e-9 and abs(bn.epsilon - 1e-3) < 1e-12
    agree(m, "test.h5", *eval_figures("eval.txt", which), which + ".keras")
PY

# --format keras-weights: into the model a Keras user builds with the same
# layers (Keras' own names), by model.load_weights.
keras <<'PY' || fail "keras-weights"
import keras
from keras import layers as L
from agree import agree, eval_figures
m = keras.Sequential([keras.Input((28, 28, 1)), L.Conv2D(32, 3, padding="same"),
    L.BatchNormalization(), L.Activation("relu"), L.MaxPooling2D(2), L.Conv2D(64, 3, padding="same"),
    L.BatchNormalization(), L.Activation("relu"), L.MaxPooling2D(2), L.Flatten(), L.Dense(128),
    L.Activation("relu"), L.Dropout(0.3), L.Dense(10, activation="softmax")])
m.load_weights("ema.weights.h5")
agree(m, "test.h5", *eval_figures("eval.txt", "ema"), "model.load_weights(ema.weights.h5)")
PY

# A residual network: Keras' functional model with Add.
res="conv2d:8:3,batchnorm,relu,[conv2d:8:3,batchnorm,relu,conv2d:8:3,batchnorm],relu,"
res+="[conv2d:16:3:2,batchnorm,relu,conv2d:16:3,batchnorm|conv2d:16:1:2,batchnorm],relu,globalavgpool,dense"
ranks 2 --model "$res" --input-shape 28,28,1 --data train.h5 --eval-data test.h5 --steps 400 \
	--batch 64 --ckpt-dir rk >/dev/null
"$MTRAIN" export rk/ckpt-00000400.h5 --format keras --weights ema --out res.keras >/dev/null
ranks 2 eval --ckpt rk/ckpt-00000400.h5 --weights ema --device cpu >res_eval.txt
# The default job's MLP on the 28x28x1 images: Keras' input is the flat
# row, as mtrain's dense reads it.
ranks 2 --data train.h5 --eval-data test.h5 --steps 100 --activation gelu --ckpt-dir mk >/dev/null
"$MTRAIN" export mk/ckpt-00000100.h5 --format keras --out mlp.keras >/dev/null
ranks 2 eval --ckpt mk/ckpt-00000100.h5 --weights raw --device cpu >mlp_eval.txt
# A model whose last layer is not a dense: Keras' model gives probabilities
# still (an Activation "softmax" after it), its loss mtrain's.
ranks 1 --model flatten,dense,relu --input-shape 28,28,1 --data train.h5 --steps 20 --ckpt-dir rl \
	--device cpu >/dev/null
"$MTRAIN" export rl/ckpt-00000020.h5 --format keras --out relu.keras >/dev/null
ranks 1 eval --ckpt rl/ckpt-00000020.h5 --eval-data test.h5 --weights raw --device cpu >relu_eval.txt
keras <<'PY' || fail "the residual network, the MLP or the relu-ended model in Keras"
import keras
from agree import agree, eval_figures
m = keras.saving.load_model("res.keras")
adds = [l for l in m.layers if type(l).__name__ == "Add"]
assert [l.name for l in adds] == ["add", "add_1"], [l.name for l in adds]
# add_1 takes the main path's last batch norm and the shortcut's.
ins = [t._keras_history[0].name for t in adds[1].input]
assert ins == ["batch_normalization_4", "batch_normalization_5"], ins
agree(m, "test.h5", *eval_figures("res_eval.txt", "ema"), "res.keras")
m = keras.saving.load_model("mlp.keras")
assert m.input_shape == (None, 784), m.input_shape
assert [l.name for l in m.layers[1:]] == ["dense", "activation", "dense_1", "activation_1", "dense_2"]
assert m.get_layer("activation").get_config()["activation"] == "gelu"
agree(m, "test.h5", *eval_figures("mlp_eval.txt", "raw"), "mlp.keras")
m = keras.saving.load_model("relu.keras")
assert [l.name for l in m.layers] == ["input_layer", "flatten", "dense", "activation", "softmax"]
agree(m, "test.h5", *eval_figures("relu_eval.txt", "raw"), "relu.keras")
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
