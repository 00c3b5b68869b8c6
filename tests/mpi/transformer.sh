# A transformer across ranks: a small ViT (patches as tokens, a position
# embedding, pre-norm blocks of causal attention with dropout on its
# probabilities and an MLP, layer norm, the mean over tokens) trains to the
# same weights on 1, 2 and 4 ranks after 20 AdamW steps, within 1e-5
# (dropout's masks keyed by the global batch's row, never the rank);
# --zero 0 and 1 train the same weights on 2 ranks (bitwise); a run stopped
# at 9 and resumed is bitwise the unbroken one, on 2 ranks and resumed on 1;
# mtrain eval evaluates it with dropout off; Keras' names in the file; bad
# descriptions are one line, exit 2.
. "$(dirname "$0")/lib.sh"
"$MKDATA" synth flat.h5 84 48 3 11
"$MKDATA" synth flat-eval.h5 30 48 3 12
"$MKDATA" reshape flat.h5 train.h5 4 4 3
"$MKDATA" reshape flat-eval.h5 eval.h5 4 4 3
MODEL='conv2d:8:2:2:valid,tokens,posembed,2*([layernorm,attention:2:causal:0.2],[layernorm,dense:16,gelu,dropout:0.1,dense:8]),layernorm,globalavgpool,dense'
FLAGS=(--device cpu --data train.h5 --eval-data eval.h5 --model "$MODEL" --batch 14 --seed 5
	--log-every 5 --optimizer adamw --lr 3e-3 --ema-decay 0.9)
for n in 1 2 4; do
	ranks $n "${FLAGS[@]}" --steps 20 --zero 0 --ckpt-dir ck$n >log$n
	grep -q "what layers keep\|attention's scores" log$n || grep -q "kept for the backward" log$n ||
		{ cat log$n; fail "$n ranks: the start line does not say what attention keeps"; }
done
for n in 2 4; do
	"$CMP" --norm ck1/ckpt-00000020.h5 ck$n/ckpt-00000020.h5 1e-5 || fail "$n ranks: not 1 rank's weights to 1e-5"
done
# The check has teeth: without attention's dropout the run ends elsewhere.
ranks 2 "${FLAGS[@]/attention:2:causal:0.2/attention:2:causal}" --steps 20 --ckpt-dir nodrop >/dev/null
"$CMP" --norm ck2/ckpt-00000020.h5 nodrop/ckpt-00000020.h5 1e-5 >/dev/null 2>&1 &&
	fail "attention's dropout changed nothing"
"$CMP" --names ck2/ckpt-00000020.h5 || fail "names"
ranks 2 "${FLAGS[@]}" --steps 20 --zero 1 --ckpt-dir z1 >/dev/null
same_ckpt ck2/ckpt-00000020.h5 z1/ckpt-00000020.h5
# Resumed: bitwise on as many ranks, within 1e-5 on another number.
ranks 2 "${FLAGS[@]}" --steps 9 --zero 0 --ckpt-dir split >/dev/null
ranks 2 "${FLAGS[@]}" --steps 20 --zero 0 --ckpt-dir split >log
grep -q "resumed from split/ckpt-00000009.h5" log || { cat log; fail "no resume at 9"; }
same_ckpt ck2/ckpt-00000020.h5 split/ckpt-00000020.h5
ranks 2 "${FLAGS[@]}" --steps 9 --ckpt-dir other >/dev/null
ranks 1 "${FLAGS[@]}" --steps 20 --ckpt-dir other >/dev/null
"$CMP" --norm ck1/ckpt-00000020.h5 other/ckpt-00000020.h5 1e-5 || fail "resumed on 1 rank: not within 1e-5"
# Evaluation has dropout off: the same figures on 1 and 2 ranks.
ranks 2 eval --ckpt ck2/ckpt-00000020.h5 --device cpu >e1
ranks 1 eval --ckpt ck2/ckpt-00000020.h5 --device cpu >e2
[ -s e1 ] && diff <(grep -o 'loss.*' e1) <(grep -o 'loss.*' e2) >/dev/null ||
	{ cat e1 e2; fail "eval on 1 and 2 ranks differs"; }
# Bad descriptions: one line naming the layer, exit 2, nothing written.
expect_error "--model: layer 2 \(attention, written at character 8\): its width 3 is not a multiple of its 2 heads" \
	"$MTRAIN" --device cpu --data train.h5 --model tokens,attention:2,globalavgpool,dense --batch 14 --steps 1 --ckpt-dir bad
expect_error "layer 1 \(embedding.*takes token ids, but the data's rows are pixels or values" \
	"$MTRAIN" --device cpu --data flat.h5 --model embedding:8,flatten,dense --batch 14 --steps 1 --ckpt-dir bad
expect_error "layer 2 \(conv2d.*takes images \[H, W, C\], but its input is a sequence of 16 tokens of 3" \
	"$MTRAIN" --device cpu --data train.h5 --model tokens,conv2d:4:2,flatten,dense --batch 14 --steps 1 --ckpt-dir bad
expect_error "layer 1 \(tokens\) needs an image, but the data's rows are flat \[48\]: give their shape with --input-shape H,W,C \(e.g. 4,4,3\)" \
	"$MTRAIN" --device cpu --data flat.h5 --model tokens,attention:3,globalavgpool,dense --batch 14 --steps 1 --ckpt-dir bad
[ ! -e bad ] || fail "a refused --model left --ckpt-dir behind"
pass "a ViT with attention dropout: 1, 2 and 4 ranks within 1e-5, --zero 0 and 1 equal, resume bitwise (and across world sizes within 1e-5), eval without dropout"
