# A vision transformer out to Keras and back. A small ViT of
# jobs/fmnist-vit.conf's shape (patches by a strided conv2d, tokens,
# position embeddings, 2 pre-norm blocks of attention and an MLP, pooling
# over the tokens) trained 300 steps on 2 ranks, exported raw and EMA:
# keras.saving.load_model opens the .keras with keras_hub installed and no
# code of ours (Reshape, keras_hub's PositionEmbedding and an Add,
# LayerNormalization, MultiHeadAttention called on (x, x), Dense on each
# token, GlobalAveragePooling1D), and its accuracy and loss on the 10,000
# Fashion-MNIST test images are what `mtrain eval` prints (within 5 images
# and 5e-4). The same ViT written in Keras 3 by hand (keras_hub's
# PositionEmbedding where core Keras has none) takes the .weights.h5 by
# Keras' own names (model.load_weights) to mtrain's accuracy; the file
# holds the datasets Keras' own save_weights writes, at the same paths
# and shapes (attention's four sublayers query_dense, key_dense,
# value_dense, output_dense). --init-from the exported .keras, and from
# the file Keras itself saved, starts a run whose step-0 evaluation is
# mtrain eval's.
. "$(dirname "$0")/lib.sh"
need_keras_hub
import_fmnist
vit="conv2d:32:4:4:valid,tokens,posembed,2*([layernorm,attention:4],[layernorm,dense:64,gelu,dense:32]),"
vit+="layernorm,globalavgpool,dense"
RUN=(--model "$vit" --input-shape 28,28,1 --data train.h5 --eval-data test.h5 --batch 64)
ranks 2 "${RUN[@]}" --steps 300 --ckpt-dir ck >/dev/null
ck=ck/ckpt-00000300.h5
export_all $ck 22

# (a) The .keras, raw and EMA: Keras' classes under mtrain's names (and
# the Add after position_embedding), attention as mtrain has it, Keras'
# figures mtrain eval's.
keras <<'PY' || fail "the ViT's .keras in Keras"
import keras, keras_hub
from agree import agree, eval_figures
names = open("names.txt").read().split()
for which in ["raw", "ema"]:
    m = keras.saving.load_model(which + ".keras")
    shown = [l.name for l in m.layers[1:]]
    want = names[:3] + ["position_embedding_add"] + names[3:]
    assert shown == want, (shown, want)
    kinds = [type(l).__name__ for l in m.layers[1:9]]
    assert kinds == ["Conv2D", "Reshape", "PositionEmbedding", "Add", "LayerNormalization",
                     "MultiHeadAttention", "Add", "LayerNormalization"], kinds
    assert isinstance(m.get_layer("position_embedding"), keras_hub.layers.PositionEmbedding)
    assert type(m.get_layer("global_average_pooling1d")).__name__ == "GlobalAveragePooling1D"
    mha = m.get_layer("multi_head_attention")
    c = mha.get_config()
    assert (c["num_heads"], c["key_dim"], c["value_dim"], c["dropout"], c["use_bias"]) == \
        (4, 8, 8, 0.0, True), c
    # self-attention: query and value the same tensor, no mask
    node = mha._inbound_nodes[0]
    q, v = node.arguments.args[:2]
    assert q is v and q._keras_history[0].name == "layer_normalization", node.arguments.args
    assert not node.arguments.kwargs.get("use_causal_mask"), node.arguments.kwargs
    ln = m.get_layer("layer_normalization")
    assert abs(ln.epsilon - 1e-3) < 1e-12 and list(ln.axis) == [-1], (ln.epsilon, ln.axis)
    assert m.get_layer("dense").output.shape == (None, 49, 64)
    agree(m, "test.h5", *eval_figures("eval.txt", which), which + ".keras")
PY

# (b) The ViT as a Keras user writes it, from Keras' own layers (and
# keras_hub's): load_weights of mtrain's file by Keras' names. Keras then
# saves the weights itself: the same datasets, paths and shapes.
keras <<'PY' || fail "the ViT rebuilt in Keras from its own names"
import h5py, keras, keras_hub
from keras import layers as L
from agree import agree, eval_figures
inp = keras.Input((28, 28, 1))
x = L.Conv2D(32, 4, strides=4, padding="valid")(inp)
x = L.Reshape((49, 32))(x)
x = x + keras_hub.layers.PositionEmbedding(sequence_length=49)(x)
for _ in range(2):
    h = L.LayerNormalization()(x)
    x = x + L.MultiHeadAttention(num_heads=4, key_dim=8)(h, h)
    h = L.LayerNormalization()(x)
    h = L.Dense(64, activation="gelu")(h)
    x = x + L.Dense(32)(h)
x = L.GlobalAveragePooling1D()(L.LayerNormalization()(x))
m = keras.Model(inp, L.Dense(10, activation="softmax")(x))
m.load_weights("ema.weights.h5")
agree(m, "test.h5", *eval_figures("eval.txt", "ema"), "the Keras ViT, load_weights(ema.weights.h5)")
m.save_weights("keras_own.weights.h5")
def datasets(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda k, o: out.__setitem__(k, o.shape) if isinstance(o, h5py.Dataset) else None)
    return out
ours, theirs = datasets("ema.weights.h5"), datasets("keras_own.weights.h5")
assert ours == theirs, (sorted(set(ours.items()) ^ set(theirs.items())))
assert theirs["layers/multi_head_attention_1/output_dense/vars/0"] == (4, 8, 32), theirs
assert theirs["layers/position_embedding/vars/0"] == (49, 32), theirs
print(f"{len(ours)} datasets, as Keras' save_weights writes them")
PY

# (d) --init-from the exported .keras, and from Keras' own save of the
# same weights: the evaluation before the first step is mtrain eval's.
for f in raw.keras:raw keras_own.weights.h5:ema; do
	file=${f%:*} which=${f#*:}
	read -r eloss eacc < <(sed -n "s/.* $which loss \([0-9.]*\) acc \([0-9.]*\) .*/\1 \2/p" eval.txt)
	ranks 2 "${RUN[@]}" --init-from "$file" --steps 1 --ckpt-dir "init-$file" --metrics "$file.jsonl" \
		>"$file.out" 2>"$file.err" || { cat "$file.err"; fail "--init-from $file: the run failed"; }
	grep -q "^init-from $file (.*): 39 variables from it, 0 left fresh" "$file.out" ||
		{ cat "$file.out"; fail "--init-from $file: not the ViT's 39 variables taken"; }
	! grep -q "does not have" "$file.err" || { cat "$file.err"; fail "--init-from $file: names called extra"; }
	read -r loss acc < <(step0 "$file.jsonl")
	echo "--init-from $file: step 0 loss $loss acc $acc; mtrain eval ($which) $eloss $eacc"
	[ "$(printf '%.4f %.4f' "$loss" "$acc")" = "$eloss $eacc" ] ||
		fail "--init-from $file: step 0 loss $loss acc $acc, mtrain eval ($which) $eloss $eacc"
done
pass "keras vit: load_model and a Keras-built ViT give mtrain's accuracy; its files back by name"
