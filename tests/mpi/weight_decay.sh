# --weight-decay-on (issue 36): weight decay on matrices (kernels and
# embeddings) only by default, as nanoGPT, or on every variable. After one
# AdamW step at a large decay, against the same step without decay: with
# matrices, every kernel and embedding table differs and every bias, gamma
# and beta is the same bits (they see the same first gradient); with all,
# the layer norms' gammas differ too. Under ZeRO-1 on 2 and 3 ranks (shards
# that cut variables in two) the unsharded weights.
. "$(dirname "$0")/lib.sh"
need_python h5py numpy
python3 -c "open('abc.txt','w').write(''.join('the quick brown fox %d. ' % (i % 7) for i in range(200)))"
"$MTRAIN" import --text abc.txt --out abc.h5 >/dev/null
# Widths of 15 and 30: the registry's aligned offsets leave gaps between
# variables.
GPT='embedding:15,posembed,[layernorm,attention:3:causal],[layernorm,dense:30,gelu,dense:15],layernorm,dense'
FLAGS=(--device cpu --data abc.h5 --context 16 --batch 12 --seed 3 --model "$GPT" --eval-data none
	--optimizer adamw --lr 1e-2 --steps 1)
ranks 2 "${FLAGS[@]}" --weight-decay 0 --ckpt-dir none >/dev/null
ranks 2 "${FLAGS[@]}" --weight-decay 0.5 --zero 0 --ckpt-dir matrices >/dev/null
ranks 2 "${FLAGS[@]}" --weight-decay 0.5 --weight-decay-on all --ckpt-dir all >/dev/null
# Which variables moved differently from the step without decay.
"$PY" - none/ckpt-00000001.h5 matrices/ckpt-00000001.h5 all/ckpt-00000001.h5 <<'PY' ||
import sys, h5py, numpy as np
none, matrices, every = (h5py.File(p) for p in sys.argv[1:])
bad = []
for k in none:
    last = k.split(".")[-1]
    if last not in ("kernel", "bias", "gamma", "beta", "embeddings"):
        continue
    a, b, c = none[k][()], matrices[k][()], every[k][()]
    if last in ("kernel", "embeddings") and np.array_equal(a, b):
        bad.append(f"{k}: not decayed under matrices")
    if last in ("bias", "gamma", "beta") and not np.array_equal(a, b):
        bad.append(f"{k}: decayed under matrices")
    if last == "gamma" and np.array_equal(a, c):
        bad.append(f"{k}: not decayed under all")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
	fail "weight decay fell on other variables than --weight-decay-on says"
# ZeRO-1's shards cut variables: each shard's runs of decayed and undecayed
# values as the whole's. Bitwise on 2 ranks; on 3, a reduce-scatter sums
# three ranks' gradients in another order than an all-reduce, so within
# 1e-5 (a bias decayed by mistake moves 1e-3 of itself).
for n in 2 3; do
	ranks $n "${FLAGS[@]}" --weight-decay 0.5 --zero 1 --steps 3 --ckpt-dir z$n >/dev/null
	ranks $n "${FLAGS[@]}" --weight-decay 0.5 --zero 0 --steps 3 --ckpt-dir u$n >/dev/null
done
same_ckpt u2/ckpt-00000003.h5 z2/ckpt-00000003.h5
"$CMP" --norm u3/ckpt-00000003.h5 z3/ckpt-00000003.h5 1e-5 || fail "3 ranks: ZeRO-1 not the unsharded weights to 1e-5"
pass "weight decay on kernels and embeddings only by default, on every variable with all; ZeRO-1's shards alike"
