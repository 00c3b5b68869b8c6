# --precision bf16 on the CPU (issue 37): a conv2d and dense model trained
# 20 steps with bf16 products (oneDNN's bf16 kernels on a CPU with
# AVX512_BF16, else forced: the operands rounded for the fp32 kernels) has
# other weights than fp32's (the products were rounded) yet near them; 1
# and 2 ranks agree within bf16's tolerance; the checkpoint's variables are
# fp32; 10 steps, a stop and --resume give the bits of 20 straight.
. "$(dirname "$0")/lib.sh"
need_python h5py numpy
make_data
FLAGS=(--device cpu --data train.h5 --eval-data none --input-shape 4,3,1 --batch 14 --seed 5
	--model conv2d:6:3,relu,conv2d:4:2:1:valid,flatten,dense:8,gelu,dense --lr 0.01
	--log-every 5)
ranks 2 "${FLAGS[@]}" --steps 20 --ckpt-dir f32 >/dev/null
for n in 1 2; do
	ranks $n "${FLAGS[@]}" --steps 20 --precision bf16 --force-bf16 on --ckpt-dir b$n >log$n
	grep -q "backend cpu bf16" log$n || { cat log$n; fail "$n ranks: the start line does not say bf16"; }
done
"$CMP" --norm b1/ckpt-00000020.h5 b2/ckpt-00000020.h5 2e-2 || fail "bf16: 1 and 2 ranks further apart than 2e-2"
"$CMP" --norm f32/ckpt-00000020.h5 b2/ckpt-00000020.h5 5e-2 || fail "bf16 further than 5e-2 from fp32"
"$CMP" --norm f32/ckpt-00000020.h5 b2/ckpt-00000020.h5 1e-4 >/dev/null 2>&1 &&
	fail "bf16 within 1e-4 of fp32: its products were not rounded"
"$PY" - b2/ckpt-00000020.h5 <<'PY' || fail "the bf16 run's checkpoint holds variables that are not fp32"
import sys, h5py
f = h5py.File(sys.argv[1])
bad = []
f.visititems(lambda k, v: bad.append(f"{k} {v.dtype}") if isinstance(v, h5py.Dataset) and v.dtype.kind == "f" and v.dtype.itemsize != 4 else None)
print("not fp32:", bad) if bad else None
sys.exit(1 if bad else 0)
PY
ranks 2 "${FLAGS[@]}" --steps 10 --precision bf16 --force-bf16 on --ckpt-dir r >/dev/null
ranks 2 "${FLAGS[@]}" --steps 20 --precision bf16 --force-bf16 on --ckpt-dir r >logr
grep -q "resumed from r/ckpt-00000010.h5" logr || { cat logr; fail "no resume at step 10"; }
same_ckpt b2/ckpt-00000020.h5 r/ckpt-00000020.h5
pass "--precision bf16 on the CPU: near fp32 but not it, 1 and 2 ranks within 2e-2, fp32 checkpoints, bitwise resume"
