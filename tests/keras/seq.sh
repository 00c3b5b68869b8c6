# The sequence layers' arguments out to Keras: a causal attention with
# dropout on its probabilities and gelu's tanh form, and a layernorm of
# epsilon 1e-5, each a small ViT trained 200 steps on 2 ranks and exported
# as .keras. keras.saving.load_model opens them with no code of ours:
# MultiHeadAttention called with use_causal_mask=True and dropout 0.1,
# keras.ops.gelu(x, approximate=True) as the functional model's operation,
# LayerNormalization(epsilon=1e-5); Keras' accuracy and loss on the
# 10,000 test images are mtrain eval's (within 5 images and 5e-4). The
# same file with the causal mask taken out of its config.json does not
# agree: the check sees the mask. A layernorm on an image's pixels makes
# Keras' input an image, so a dense after it is refused as for a conv2d.
. "$(dirname "$0")/lib.sh"
need_keras_hub
import_fmnist
patches="conv2d:16:4:4:valid,tokens,posembed"
causal="$patches,[layernorm,attention:2:causal:0.1],[layernorm,dense:32,gelu_tanh,dense:16],layernorm,globalavgpool,dense"
eps="$patches,[layernorm:1e-5,attention:2],layernorm:1e-5,globalavgpool,dense"
for m in causal eps; do
	ranks 2 --model "${!m}" --input-shape 28,28,1 --data train.h5 --batch 64 --steps 200 --ckpt-dir $m >/dev/null
	"$MTRAIN" export $m/ckpt-00000200.h5 --format keras --out $m.keras >/dev/null
	ranks 2 eval --ckpt $m/ckpt-00000200.h5 --eval-data test.h5 --weights raw --device cpu >$m.txt
done

keras <<'PY' || fail "the causal and the epsilon models in Keras"
import json, zipfile
import keras
from agree import agree, eval_figures
m = keras.saving.load_model("causal.keras")
mha = m.get_layer("multi_head_attention")
assert mha.get_config()["dropout"] == 0.1, mha.get_config()
assert mha._inbound_nodes[0].arguments.kwargs == {"use_causal_mask": True}
gelu = [o for o in m.operations if type(o).__name__ == "Gelu"]
assert len(gelu) == 1 and gelu[0].approximate is True, m.operations
agree(m, "test.h5", *eval_figures("causal.txt", "raw"), "causal.keras")
# the same weights without the mask: Keras' figures are not mtrain's
z = zipfile.ZipFile("causal.keras")
config = z.read("config.json").decode()
assert config.count('"use_causal_mask": true') == 1, "no causal mask in config.json"
with zipfile.ZipFile("unmasked.keras", "w") as out:
    for name in z.namelist():
        text = z.read(name)
        out.writestr(name, config.replace('"use_causal_mask": true', "") if name == "config.json" else text)
try:
    agree(keras.saving.load_model("unmasked.keras"), "test.h5", *eval_figures("causal.txt", "raw"),
          "causal.keras without its mask")
except AssertionError:
    print("causal.keras without its mask: not mtrain's figures, as it should be")
else:
    raise AssertionError("the causal mask makes no difference: this check could not fail")
m = keras.saving.load_model("eps.keras")
for name in ["layer_normalization", "layer_normalization_1"]:
    assert m.get_layer(name).epsilon == 1e-5, (name, m.get_layer(name).epsilon)
agree(m, "test.h5", *eval_figures("eps.txt", "raw"), "eps.keras")
PY

ranks 1 --model layernorm,dense --input-shape 28,28,1 --data train.h5 --steps 1 --ckpt-dir ln \
	--device cpu >/dev/null
expect_error "layer 2 \(dense, dense\) takes a 28x28x1 image, where Keras' Dense would apply at each position" \
	"$MTRAIN" export ln/ckpt-00000001.h5 --format keras --out ln.keras
[ ! -e ln.keras ] || fail "a refused export left ln.keras"
pass "keras seq: causal attention with dropout, gelu_tanh and layernorm:1e-5 agree with mtrain eval in Keras"
