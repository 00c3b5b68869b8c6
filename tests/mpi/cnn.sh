# A CNN with batch normalization and dropout. With --sync-bn (statistics of
# the whole global batch) 1, 2, 3 and 4 ranks train the same weights within
# 1e-5 (normwise per variable), bitwise again on a rerun and across a resume
# inside an epoch, and a run resumed 4 -> 2 -> 1 ranks ends where the
# unbroken one does. The checkpoint holds one moving mean and variance per
# batch-norm layer under its Keras name, with no shadow, no slot and no
# replica index. With each rank's own statistics the replicas' trainable
# variables still agree bitwise (--check-replicas) while the statistics
# differ from --sync-bn's; evaluation and export use the moving statistics.
# The trainer averages the ranks' own moving statistics: after one step of
# 7 rows a rank they equal --sync-bn's (ema_sync.c checks the mean itself).
. "$(dirname "$0")/lib.sh"
make_data
# Batch norm after each activation: a bias right before batch norm has a
# gradient of 0 up to rounding (the normalisation removes it), which Adam
# scales up into noise that differs with the rank count; here every
# variable has a real gradient.
MODEL=conv2d:4:2,relu,batchnorm,maxpool2d:2:1,flatten,dense:8,tanh,batchnorm,dropout:0.3,dense
FLAGS=(--device cpu --data train.h5 --eval-data eval.h5 --batch 14 --seed 5 --log-every 5
	--input-shape 2,2,3 --model $MODEL --lr 0.01)
for n in 1 2 3 4; do
	ranks $n "${FLAGS[@]}" --sync-bn --steps 20 --ckpt-dir ck$n >log$n
	grep -q "model ${MODEL/conv2d:4:2/conv2d:4:2:1:same}, " log$n || { cat log$n; fail "$n ranks: the start line does not name the model"; }
done
for n in 2 3 4; do
	"$CMP" --norm ck1/ckpt-00000020.h5 ck$n/ckpt-00000020.h5 1e-5 ||
		fail "--sync-bn on $n ranks differs from 1 rank"
done
# The same with whole replicas (--zero 0: each layer's gradients all-reduced
# as backward makes them, between --sync-bn's sums; one node's default is
# ZeRO-1).
ranks 3 "${FLAGS[@]}" --sync-bn --steps 20 --zero 0 --ckpt-dir z0 >/dev/null
"$CMP" --norm ck1/ckpt-00000020.h5 z0/ckpt-00000020.h5 1e-5 || fail "--sync-bn --zero 0 on 3 ranks"
"$CMP" --names ck2/ckpt-00000020.h5 >names || { cat names; fail "names"; }
grep -q "10 trainable variables, 10 shadows, 4 moving statistics, names canonical" names ||
	{ cat names; fail "not one moving mean and variance per batch-norm layer"; }
# Bitwise: a rerun, and a run stopped at 9 (inside the second epoch of 6
# steps) and resumed.
ranks 2 "${FLAGS[@]}" --sync-bn --steps 20 --ckpt-dir again >/dev/null
same_ckpt ck2/ckpt-00000020.h5 again/ckpt-00000020.h5
ranks 2 "${FLAGS[@]}" --sync-bn --steps 9 --ckpt-dir split >/dev/null
ranks 2 "${FLAGS[@]}" --sync-bn --steps 20 --ckpt-dir split >log
grep -q "resumed from split/ckpt-00000009.h5" log || fail "no resume at 9"
same_ckpt ck2/ckpt-00000020.h5 split/ckpt-00000020.h5
# 4 -> 2 -> 1 ranks.
ranks 4 "${FLAGS[@]}" --sync-bn --steps 8 --ckpt-dir world >/dev/null
ranks 2 "${FLAGS[@]}" --sync-bn --steps 15 --ckpt-dir world >log
grep -q "resumed from world/ckpt-00000008.h5" log || fail "no resume at 8 on 2 ranks"
ranks 1 "${FLAGS[@]}" --sync-bn --steps 20 --ckpt-dir world >log
grep -q "resumed from world/ckpt-00000015.h5" log || fail "no resume at 15 on 1 rank"
"$CMP" --norm ck1/ckpt-00000020.h5 world/ckpt-00000020.h5 1e-5 || fail "4 -> 2 -> 1 ranks"
# Each rank's own statistics: trainables agree bitwise on every step, the
# result is not --sync-bn's.
ranks 2 "${FLAGS[@]}" --steps 20 --check-replicas 1 --ckpt-dir local >log ||
	{ cat log; fail "local statistics"; }
"$CMP" --norm ck2/ckpt-00000020.h5 local/ckpt-00000020.h5 1e-5 >/dev/null 2>&1 &&
	fail "--sync-bn changed nothing"
"$CMP" --names local/ckpt-00000020.h5 >/dev/null || fail "names with local statistics"
# The mean of equal-count batch means is the global batch's mean, so after
# one step (same initial weights, so the same inputs to the first batch
# norm) its moving mean with each rank's own statistics, averaged over the
# ranks, is --sync-bn's; rank 0's own (not averaged) is not.
ranks 2 "${FLAGS[@]}" --sync-bn --steps 1 --ckpt-dir mm_sync >/dev/null
ranks 2 "${FLAGS[@]}" --steps 1 --ckpt-dir mm_local >/dev/null
moving_mean() { h5dump -d /batch_normalization.moving_mean -A 0 -y -m %.9g -w 0 "$1" |
	sed -n '/DATA {/,/}/p' | grep -v '[{}]' | tr ',' ' '; }
python3 - <(moving_mean mm_sync/ckpt-00000001.h5) <(moving_mean mm_local/ckpt-00000001.h5) <<'PY' ||
import sys
a = [float(v) for v in open(sys.argv[1]).read().split()]
b = [float(v) for v in open(sys.argv[2]).read().split()]
assert len(a) == len(b) == 4 and any(a), (a, b)
assert all(abs(x - y) <= 1e-6 * (1 + abs(x)) for x, y in zip(a, b)), ("--sync-bn", a, "local", b)
PY
	fail "moving_mean with each rank's own statistics is not the mean over the ranks"
# Evaluation: inference mode (moving statistics, no dropout): the same
# figures on 1 and 2 ranks.
ranks 2 eval --ckpt ck2/ckpt-00000020.h5 --eval-data eval.h5 --device cpu >e1
ranks 1 eval --ckpt ck2/ckpt-00000020.h5 --eval-data eval.h5 --device cpu >e2
[ -s e1 ] && diff <(grep -o 'loss.*' e1) <(grep -o 'loss.*' e2) >/dev/null ||
	{ cat e1 e2; fail "eval on 1 and 2 ranks differs"; }
# Export with the EMA weights carries the moving statistics as they are.
"$MTRAIN" export ck2/ckpt-00000020.h5 --out ema.safetensors --weights ema >/dev/null ||
	fail "export --weights ema of a batch-norm model"
grep -aq '"batch_normalization_1/moving_variance"' ema.safetensors || fail "export lacks moving statistics"
pass "CNN with batchnorm and dropout: --sync-bn 1-4 ranks within 1e-5, rerun and resume bitwise, 4->2->1 resume, one moving mean/variance per layer, local statistics keep replicas equal and are averaged over the ranks"
