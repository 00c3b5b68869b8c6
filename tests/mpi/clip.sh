# --clip-norm (issue 36): the global gradient's L2 norm, taken after the
# reduction (under ZeRO-1 from each shard's sum of squares), scaled down to
# the limit when over it. One SGD step of learning rate 1 moves the weights
# by exactly the limit (1e-5 relative) on 1 rank, 2 ranks and 2 ranks under
# ZeRO-1, the progress line saying the norm and that the step was clipped;
# a limit never reached changes no bit; a small GPT trained 20 AdamW steps
# with clipping at work has the same weights on 1, 2 and 3 ranks and under
# ZeRO-1 (within 1e-5), and other weights than without it.
. "$(dirname "$0")/lib.sh"
need_python h5py numpy
make_data
FLAGS=(--device cpu --data train.h5 --eval-data none --layers 16,8 --batch 14 --seed 5
	--log-every 1 --optimizer sgd --momentum 0)
# The initial weights: a step too small to change a bit of them.
ranks 1 "${FLAGS[@]}" --lr 1e-30 --steps 1 --ckpt-dir w0 >/dev/null
for run in 1:0 2:0 2:1; do
	IFS=: read -r n z <<<"$run"
	ranks $n "${FLAGS[@]}" --lr 1 --steps 1 --zero $z --clip-norm 0.01 --ckpt-dir c$n$z >log$n$z
	grep -qE "step 1/1 .* norm [0-9.]+ clipped 1/1" log$n$z || { cat log$n$z; fail "$n ranks: no norm and clipped count"; }
	"$PY" - w0/ckpt-00000001.h5 c$n$z/ckpt-00000001.h5 <<'PY' || fail "$n ranks, zero $z: the step is not 0.01 long"
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
names = [k for k in a if k.endswith(".kernel") or k.endswith(".bias")]
step = np.sqrt(sum(np.sum((b[k][()].astype(np.float64) - a[k][()]) ** 2) for k in names))
print(f"step length {step:.8f} over {len(names)} variables")
sys.exit(0 if abs(step - 0.01) <= 1e-7 else 1)
PY
done
# A limit over every step's norm: the same bits as no limit.
ranks 2 "${FLAGS[@]}" --lr 0.1 --steps 6 --ckpt-dir plain >/dev/null
ranks 2 "${FLAGS[@]}" --lr 0.1 --steps 6 --clip-norm 1e9 --ckpt-dir high >loghigh
grep -q "clipped 0/1" loghigh || { cat loghigh; fail "a limit of 1e9 clipped a step"; }
same_ckpt plain/ckpt-00000006.h5 high/ckpt-00000006.h5

# A small GPT, clipped at work: the same weights on any world size.
python3 -c "open('abc.txt','w').write(''.join('the quick brown fox %d. ' % (i % 7) for i in range(300)))"
"$MTRAIN" import --text abc.txt --out abc.h5 >/dev/null
GPT='embedding:16,posembed,[layernorm:1e-5,attention:2:causal],[layernorm:1e-5,dense:32,gelu,dense:16],layernorm:1e-5,dense'
GFLAGS=(--device cpu --data abc.h5 --context 16 --batch 12 --seed 3 --model "$GPT"
	--optimizer adamw --lr 3e-3 --log-every 5 --steps 20)
for run in 1:0 2:0 3:0 2:1; do
	IFS=: read -r n z <<<"$run"
	ranks $n "${GFLAGS[@]}" --zero $z --clip-norm 0.5 --ckpt-dir g$n$z >glog$n$z
done
grep -qE "clipped [1-9]" glog20 || { cat glog20; fail "the GPT's clipping never acted"; }
for run in 20 30 21; do
	"$CMP" --norm g10/ckpt-00000020.h5 g$run/ckpt-00000020.h5 1e-5 || fail "clipped GPT ($run): not 1 rank's weights to 1e-5"
done
ranks 2 "${GFLAGS[@]}" --zero 0 --ckpt-dir unclipped >/dev/null
"$CMP" --norm g20/ckpt-00000020.h5 unclipped/ckpt-00000020.h5 1e-5 >/dev/null 2>&1 &&
	fail "clipping the GPT changed nothing"
pass "--clip-norm: a step of exactly the limit on 1 and 2 ranks and under ZeRO-1, a limit never reached changes no bit, a clipped GPT the same on 1-3 ranks and ZeRO-1"
