# --model: a described model with dropout trains to the same weights on 1,
# 2, 3 and 4 ranks (the masks are keyed by the row of the global batch,
# never the rank), bitwise again on a rerun and across a resume inside an
# epoch (keyed by the step too), and evaluates with dropout off; the
# checkpoint holds Keras' names; images [N, H, W, C] shape a conv2d; a bad
# description is one line, exit 2.
. "$(dirname "$0")/lib.sh"
make_data
MODEL=dense:16,relu,dropout:0.3,dense:8,tanh,dropout:0.5,dense
FLAGS=("${SMALL[@]}" --model $MODEL --optimizer sgd --lr 0.2)
for n in 1 2 3 4; do
	ranks $n "${FLAGS[@]}" --steps 20 --ckpt-dir ck$n >log$n
	grep -q "model $MODEL, 371 parameters" log$n || { cat log$n; fail "$n ranks: the start line does not name the model"; }
done
for n in 2 3 4; do
	same_ckpt ck1/ckpt-00000020.h5 ck$n/ckpt-00000020.h5 3e-5
done
# The masks matter: the same model without dropout ends elsewhere.
ranks 2 "${SMALL[@]}" --model dense:16,relu,dense:8,tanh,dense --optimizer sgd --lr 0.2 \
	--steps 20 --ckpt-dir nodrop >/dev/null
"$CMP" ck1/ckpt-00000020.h5 nodrop/ckpt-00000020.h5 3e-5 >/dev/null 2>&1 &&
	fail "dropout changed nothing"
"$CMP" --names ck2/ckpt-00000020.h5 || fail "names"
# Bitwise: a rerun, and a run stopped at 9 (inside the second epoch of 6
# steps) and resumed.
ranks 2 "${FLAGS[@]}" --steps 20 --ckpt-dir again >/dev/null
same_ckpt ck2/ckpt-00000020.h5 again/ckpt-00000020.h5
ranks 2 "${FLAGS[@]}" --steps 9 --ckpt-dir split >/dev/null
ranks 2 "${FLAGS[@]}" --steps 20 --ckpt-dir split >log
grep -q "resumed from split/ckpt-00000009.h5" log || fail "no resume at 9"
same_ckpt ck2/ckpt-00000020.h5 split/ckpt-00000020.h5
# Evaluation has dropout off: mtrain eval's figures are a rerun's.
ranks 2 eval --ckpt ck2/ckpt-00000020.h5 --eval-data eval.h5 --device cpu >e1
ranks 1 eval --ckpt ck2/ckpt-00000020.h5 --eval-data eval.h5 --device cpu >e2
[ -s e1 ] && diff <(grep -o 'loss.*' e1) <(grep -o 'loss.*' e2) >/dev/null ||
	{ cat e1 e2; fail "eval on 1 and 2 ranks differs (dropout in evaluation?)"; }
# Images [N, H, W, C] give a conv2d its input shape without --input-shape,
# in training and in mtrain eval of the checkpoint (its figures the run's).
"$MKDATA" reshape train.h5 img-train.h5 2 2 3
"$MKDATA" reshape eval.h5 img-eval.h5 2 2 3
ranks 2 "${SMALL[@]}" --data img-train.h5 --eval-data img-eval.h5 \
	--model conv2d:4:2,relu,flatten,dense --steps 6 --ckpt-dir img >log
grep -q "model conv2d:4:2:1:same,relu,flatten,dense, 103 parameters" log || { cat log; fail "images: the model"; }
ranks 1 eval --ckpt img/ckpt-00000006.h5 --device cpu >e3 || { cat e3; fail "eval of a model trained on images"; }
want=$(grep -o 'ema_loss [0-9.]* ema_acc [0-9.]*' log | tail -n 1 | awk '{print "ema loss " $2 " acc " $4}')
grep -q "eval img/ckpt-00000006.h5 $want" e3 || { cat log e3; fail "eval of images: not the run's figures ($want)"; }
# Bad descriptions: one line naming the layer, exit 2.
expect_error "--model: layer 2 'dropout:2' \(character 10\): expected dropout:RATE" \
	"$MTRAIN" "${SMALL[@]}" --model dense:16,dropout:2,dense --steps 1 --ckpt-dir bad
expect_error "--model: the last layer \(2, relu\) gives 16 values per row; the data has 3 classes" \
	"$MTRAIN" "${SMALL[@]}" --model dense:16,relu --steps 1 --ckpt-dir bad
[ ! -e bad ] || fail "a refused --model left --ckpt-dir behind"
pass "--model with dropout: 1-4 ranks equal, rerun and resume bitwise, eval without dropout, a conv2d on images, bad descriptions named"
