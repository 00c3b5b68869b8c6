# mtrain's transformer layers against PyTorch, as llm.c's test_gpt2 checks
# itself against PyTorch, but tighter. For two small ViTs on 28x28 images
# (patches, tokens, posembed, pre-norm blocks of layernorm and attention,
# one causal; per-token dense; then globalavgpool or flatten), and a small
# GPT on a file of tokens (embedding, causal blocks, a per-token loss over
# every window's next tokens, ten steps clipped by --clip-norm; again with
# its embeddings tied), PyTorch
# builds the same model from mtrain's initial checkpoint by name
# (tests/tools/torch_reference.py, over mtrain_torch.py) and computes in
# float64:
#  - one batch's logits and mean loss within 1e-5 and every variable's
#    gradient within 1e-4 of mtrain's (tests/tools/grad_dump: mtrain's own
#    forward and backward of those rows), normwise per tensor (max |a - b|
#    over max |torch|; attention's key/bias, whose gradient is 0 but for
#    rounding, against 1e-3 of its layer's largest);
#  - ten AdamW steps of mtrain on one rank (its record of each step's rows,
#    MTRAIN_TEST_ROWS) retaken by torch.optim.AdamW with the checkpoint's
#    hyper-parameters: each step's loss within 1e-4. The first model takes
#    AdamW's defaults (weight decay 0.01), the second other values (weight
#    decay 0.1: 0.01 is below what 1e-4 sees in ten steps at lr 1e-3, and a
#    decay coupled into the gradient, Adam's L2, is not).
# The figures are printed (each gradient class's worst variable).
TOOLS=$(cd "$(dirname "$0")/../tools" && pwd) # before lib.sh's cd
. "$(dirname "$0")/lib.sh"
need_python torch h5py numpy
REF=$TOOLS/torch_reference.py
GRAD_DUMP=$MTRAIN_BUILD/tests/grad_dump
"$MKDATA" synth flat.h5 200 784 10 17 u8
"$MKDATA" reshape flat.h5 img.h5 28 28 1
# The batch of the gradients: 12 rows in no order, one twice.
ROWS="3 141 59 26 5 35 89 79 32 38 46 26"

# initial DIR MODEL: DIR/ckpt-00000001.h5 holds mtrain's initial weights
# of MODEL. There is no --steps 0 (0: as many as --epochs make) and --lr 0
# is refused, so one SGD step at --lr 1e-45, a denormal the CPU backend
# flushes to zero (FTZ and DAZ, api/backend.h): w - 0 * g is w, bitwise.
# Checked: every bias and beta still 0, every gamma 1 (a step would move
# them).
initial() {
	ranks 1 --device cpu "${DATA_FLAGS[@]}" --eval-data none --batch 16 --seed 7 --model "$2" \
		--optimizer sgd --lr 1e-45 --steps 1 --ckpt-dir "$1" >"$1.log" 2>&1 ||
		{ cat "$1.log"; fail "$1: mtrain's initial checkpoint"; }
	"$PY" - "$1/ckpt-00000001.h5" <<'PY' || fail "$1: not the initial weights"
import sys, h5py
seen = 0
with h5py.File(sys.argv[1], "r") as f:
    for k in f:
        want = {"bias": 0.0, "beta": 0.0, "gamma": 1.0}.get(k.split(".")[-1])
        if want is not None:
            assert (f[k][()] == want).all(), (k, f[k][()])
            seen += 1
assert seen > 10, seen
PY
}

# compare NAME MODEL ADAMW_FLAGS...: the batch's figures and ten AdamW steps
# of NAME's model against PyTorch's, on the data of DATA_FLAGS (--data FILE
# first).
DATA_FLAGS=(--data img.h5)
compare() {
	local name=$1 model=$2
	shift 2
	echo "== $name: $model"
	initial $name.init "$model"
	local init=$name.init/ckpt-00000001.h5
	"$GRAD_DUMP" $init "${DATA_FLAGS[1]}" $name.grads.h5 $ROWS || fail "$name: grad_dump" # a word a row
	"$PY" "$REF" grads $init "${DATA_FLAGS[1]}" $name.grads.h5 ||
		fail "$name: mtrain's logits, loss or gradients are not PyTorch's"
	MTRAIN_TEST_ROWS=$name.rows ranks 1 --device cpu "${DATA_FLAGS[@]}" --eval-data none \
		--batch 16 --seed 7 --model "$model" --init-from $init --optimizer adamw "$@" \
		--steps 10 --log-every 1 --metrics $name.jsonl --ckpt-dir $name.run >$name.log 2>&1 ||
		{ cat $name.log; fail "$name: ten AdamW steps"; }
	"$PY" "$REF" steps $init "${DATA_FLAGS[1]}" $name.rows.0 $name.jsonl $name.run/ckpt-00000010.h5 ||
		fail "$name: ten AdamW steps' losses are not PyTorch's"
}

# 16 tokens of width 32, 2 heads, two blocks, the first causal; Keras'
# layernorm epsilon, gelu.
compare vit "conv2d:32:7:7:valid,tokens,posembed,
	[layernorm,attention:2:causal],[layernorm,dense:64,gelu,dense:32],
	[layernorm,attention:2],[layernorm,dense:64,gelu,dense:32],
	layernorm,globalavgpool,dense" --lr 1e-3
# Odd shapes: 36 tokens (5x5 patches at stride 4) of width 21, 3 heads of
# 7, layernorm:1e-5, gelu_tanh, a per-token dense outside a block, and
# flatten over the tokens.
compare odd "conv2d:21:5:4:valid,tokens,posembed,
	2*([layernorm:1e-5,attention:3],[layernorm:1e-5,dense:40,gelu_tanh,dense:21]),
	[layernorm:1e-5,attention:3:causal],layernorm:1e-5,dense:6,gelu_tanh,flatten,dense" \
	--lr 2e-3 --beta1 0.8 --beta2 0.99 --eps 1e-6 --weight-decay 0.1
# A GPT on tokens 0, 1, 2, ... (a file whose windows the step record finds
# by their first token): every token's next one, the loss their mean; ten
# AdamW steps with the gradient clipped at a norm some steps exceed (their
# norms are 0.31 to 0.39).
"$MKDATA" counting count.h5 2400 0
DATA_FLAGS=(--data count.h5 --context 16)
compare gpt "embedding:24,posembed,
	2*([layernorm:1e-5,attention:3:causal],[layernorm:1e-5,dense:96,gelu,dense:24]),
	layernorm:1e-5,dense" --lr 3e-3 --beta2 0.99 --weight-decay 0.1 --clip-norm 0.35
grep -q "clipped [1-9]" gpt.log || { cat gpt.log; fail "gpt: clipping never acted"; }
# Its input and output embeddings tied (unembed): the table's gradient is
# the sum of its two uses, and PyTorch's autograd sums them itself.
compare tied "embedding:24,posembed,[layernorm:1e-5,attention:3:causal],
	[layernorm:1e-5,dense:96,gelu,dense:24],layernorm:1e-5,unembed" --lr 3e-3 --beta2 0.99 \
	--weight-decay 0.1 --clip-norm 0.35
pass "two ViTs and two GPTs (one tied): logits, loss and gradients of a batch, and ten AdamW steps (the GPTs' clipped), are PyTorch's"
