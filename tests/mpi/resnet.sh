# A residual network (an identity block, then a projection block, as
# ResNet-20 writes them, on 2x2x3 images) trained as jobs/fmnist-resnet.conf
# trains one (SGD with Nesterov momentum, weight decay): with --sync-bn 1,
# 2 and 4 ranks train the same weights within 1e-5 (normwise per variable;
# a conv2d's bias right before a batchnorm has a gradient of 0 up to
# rounding, so its values stay below 1e-6 and are judged against 0.1:
# within 1e-6), --zero 1 and --zero 0 agree on 2 ranks, a run stopped
# inside an epoch and resumed is bitwise the unbroken one, and the
# checkpoint's names are canonical (Keras', main path before shortcut).
. "$(dirname "$0")/lib.sh"
make_data
MODEL="conv2d:4:2,batchnorm,relu,[conv2d:4:2,batchnorm,relu,conv2d:4:2,batchnorm],relu,
	[conv2d:6:2:2,batchnorm,relu,conv2d:6:2,batchnorm|conv2d:6:1:2,batchnorm],relu,
	globalavgpool,dense"
FLAGS=(--device cpu --data train.h5 --eval-data eval.h5 --batch 12 --seed 5 --log-every 5
	--input-shape 2,2,3 --model "$MODEL" --optimizer momentum --nesterov on --lr 0.05
	--weight-decay 5e-4 --sync-bn)
for n in 1 2 4; do
	ranks $n "${FLAGS[@]}" --steps 20 --ckpt-dir ck$n >log$n || { cat log$n; fail "$n ranks"; }
done
grep -q "model conv2d:4:2,batchnorm,relu,\[conv2d:4:2,batchnorm,relu,conv2d:4:2,batchnorm\],relu,\[" log1 ||
	{ cat log1; fail "the start line does not show the model as written"; }
for n in 2 4; do
	"$CMP" --norm ck1/ckpt-00000020.h5 ck$n/ckpt-00000020.h5 1e-5 0.1 ||
		fail "--sync-bn on $n ranks differs from 1 rank"
done
ranks 2 "${FLAGS[@]}" --steps 20 --zero 0 --ckpt-dir z0 >/dev/null
grep -q "zero 1:" log2 || { cat log2; fail "2 ranks on one node did not use ZeRO-1"; }
"$CMP" --norm ck2/ckpt-00000020.h5 z0/ckpt-00000020.h5 1e-5 0.1 || fail "--zero 0 against --zero 1"
ranks 2 "${FLAGS[@]}" --steps 9 --ckpt-dir split >/dev/null
ranks 2 "${FLAGS[@]}" --steps 20 --ckpt-dir split >log
grep -q "resumed from split/ckpt-00000009.h5" log || { cat log; fail "no resume at 9"; }
same_ckpt ck2/ckpt-00000020.h5 split/ckpt-00000020.h5
"$CMP" --names ck2/ckpt-00000020.h5 >names || { cat names; fail "names"; }
grep -q "26 trainable variables, 26 shadows, 12 moving statistics, names canonical" names ||
	{ cat names; fail "not the variables of 6 conv2d, 6 batch_normalization and a dense"; }
h5dump -d /conv2d_5.kernel -H ck2/ckpt-00000020.h5 | grep -q "( 1, 1, 4, 6 )" ||
	fail "conv2d_5 is not the 1x1 shortcut (written after its block's main path)"
# inspect lays the checkpoint's model out from its input_shape and config.
"$MTRAIN" inspect ck2/ckpt-00000020.h5 >inspect.txt
grep -Eq '^  conv2d_5 +conv2d:6:1:2:same +1x1x6 +30  activation_2$' inspect.txt &&
	grep -Eq '^add_1 +add +1x1x6 +0  batch_normalization_4, batch_normalization_5$' inspect.txt ||
	{ cat inspect.txt; fail "inspect: no model tree"; }
pass "ResNet blocks: --sync-bn 1, 2, 4 ranks within 1e-5, --zero 0 = --zero 1, resume bitwise, canonical names, inspect's tree"
