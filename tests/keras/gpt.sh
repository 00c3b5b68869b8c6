# A GPT out to Keras and back (issue 36). Two small causal GPTs on bytes,
# one with its own logits' dense and one tied (unembed), trained 300
# steps on 2 ranks and exported as .keras: keras.saving.load_model opens
# both with keras_hub installed and no code of ours, the tied one as
# keras_hub's ReversibleEmbedding(tie_weights=True) named "embedding",
# called on the token ids and again with reverse=True on the last
# layernorm's output (one variable, no layer of the unembed's own); each
# model's probabilities over the validation split's windows (as mtrain
# cuts them: T inputs, the next T tokens the targets, one after another)
# give mtrain eval's next-token accuracy and loss per token (within 5
# targets and 5e-4). --init-from the tied .keras starts a run whose step-0
# evaluation is mtrain eval's.
. "$(dirname "$0")/lib.sh"
need_keras_hub
python3 - <<'PY'
import random
r = random.Random(5)
words = ["the", "hacker", "kludge", "cruft", "foo", "bar", "frob", "grok", "wizard", "\n"]
open("text.txt", "w").write(" ".join(r.choice(words) for _ in range(12000)))
PY
"$MTRAIN" import --text text.txt --out text.h5 >/dev/null
body="embedding:32,posembed,[layernorm:1e-5,attention:2:causal],[layernorm:1e-5,dense:64,gelu,dense:32],layernorm:1e-5"
untied="$body,dense"
tied="$body,unembed"
for m in untied tied; do
	RUN=(--model "${!m}" --data text.h5 --context 16 --batch 8 --optimizer adamw --lr 1e-2 --seed 4)
	ranks 2 "${RUN[@]}" --steps 300 --ckpt-dir $m >/dev/null
	"$MTRAIN" export $m/ckpt-00000300.h5 --format keras --out $m.keras >/dev/null
	ranks 2 eval --ckpt $m/ckpt-00000300.h5 --weights raw --device cpu >$m.txt
done

keras <<'PY' || fail "the GPTs' .keras in Keras"
import h5py, keras, keras_hub
import numpy as np
from agree import eval_figures

with h5py.File("text.h5", "r") as f:
    val = f["val_tokens"][()].astype(np.int64)
T = 16
n = (len(val) - 1) // T
x = np.stack([val[w * T:w * T + T] for w in range(n)])
y = np.stack([val[w * T + 1:w * T + T + 1] for w in range(n)])
sizes = {}
for name in ["untied", "tied"]:
    m = keras.saving.load_model(name + ".keras")
    emb = m.get_layer("embedding")
    if name == "tied":
        assert isinstance(emb, keras_hub.layers.ReversibleEmbedding) and emb.tie_weights, emb
        assert [w.path for w in emb.weights] == ["embedding/embeddings"], emb.weights
        nodes = emb._inbound_nodes
        assert len(nodes) == 2 and nodes[1].arguments.kwargs == {"reverse": True}, nodes
        assert nodes[1].arguments.args[0]._keras_history[0].name == "layer_normalization_2"
        assert "reverse_embedding" not in [l.name for l in m.layers], [l.name for l in m.layers]
    else:
        assert type(emb).__name__ == "Embedding", emb
    mha = m.get_layer("multi_head_attention")
    assert mha._inbound_nodes[0].arguments.kwargs == {"use_causal_mask": True}
    sizes[name] = sum(int(np.prod(w.shape)) for w in m.weights)
    p = m.predict(x, batch_size=256, verbose=0).astype(np.float64)
    assert p.shape == (n, T, 256), p.shape
    assert np.allclose(p.sum(-1), 1, atol=1e-4), f"{name}: the output is not probabilities"
    acc = float((p.argmax(-1) == y).mean())
    loss = float(-np.log(np.take_along_axis(p, y[..., None], -1)).mean())
    loss_want, acc_want = eval_figures(name + ".txt", "raw")
    print(f"{name}.keras: Keras next-token accuracy {acc:.4f} loss per token {loss:.4f} over "
          f"{n * T} targets, mtrain eval {acc_want:.4f} {loss_want:.4f}")
    assert abs(acc - acc_want) <= 5 / (n * T) + 1e-9, (name, acc, acc_want)
    assert abs(loss - loss_want) <= 5e-4, (name, loss, loss_want)
# the tied model: the untied one less the logits' dense (kernel and bias)
assert sizes["untied"] - sizes["tied"] == 32 * 256 + 256, sizes
PY

read -r eloss eacc < <(sed -n "s/.* raw loss \([0-9.]*\) acc \([0-9.]*\) .*/\1 \2/p" tied.txt)
ranks 2 --model "$tied" --data text.h5 --context 16 --batch 8 --init-from tied.keras --steps 1 \
	--ckpt-dir init --metrics init.jsonl >init.out 2>init.err || { cat init.err; fail "--init-from tied.keras"; }
grep -q "^init-from tied.keras (.*): 20 variables from it, 0 left fresh" init.out ||
	{ cat init.out; fail "--init-from tied.keras: not the tied GPT's 20 variables taken"; }
read -r loss acc < <(step0 init.jsonl)
echo "--init-from tied.keras: step 0 loss $loss acc $acc; mtrain eval $eloss $eacc"
[ "$(printf '%.4f %.4f' "$loss" "$acc")" = "$eloss $eacc" ] ||
	fail "--init-from tied.keras: step 0 loss $loss acc $acc, mtrain eval $eloss $eacc"
pass "keras gpt: an untied and a tied GPT (ReversibleEmbedding called again with reverse=True) give mtrain eval's loss per token in Keras; --init-from the tied .keras"
