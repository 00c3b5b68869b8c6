# The whole GPU path through the real binary: a short training run on the
# GPU matches the CPU run's weights to 1e-4 relative (cuBLAS and OpenBLAS sum
# in different orders); checkpoints written on the GPU resume on the CPU and
# the reverse; bf16 trains; --device auto picks CUDA + NCCL and says so; more
# ranks than GPUs on a node fail with a message, not a hang. Skips (77)
# without a GPU.
. "$(dirname "$0")/../mpi/lib.sh"
gpus=$("$MTRAIN_BUILD/tests/gpu/gpu_probe") || { echo "SKIPPED: no GPU visible"; exit 77; }
make_data
FLAGS=("${SMALL[@]}" --optimizer momentum --lr 0.05)
"$MTRAIN" "${FLAGS[@]}" --device cpu --steps 20 --ckpt-dir cpu >/dev/null
"$MTRAIN" "${FLAGS[@]}" --device cuda --steps 20 --ckpt-dir gpu >log
grep -q "backend cuda, communicator nccl" log || { cat log; fail "first line does not say cuda + nccl"; }
same_ckpt cpu/ckpt-00000020.h5 gpu/ckpt-00000020.h5 1e-4

# Written on one, resumed on the other.
"$MTRAIN" "${FLAGS[@]}" --device cuda --steps 10 --ckpt-dir g2c >/dev/null
"$MTRAIN" "${FLAGS[@]}" --device cpu --steps 20 --ckpt-dir g2c >/dev/null
same_ckpt cpu/ckpt-00000020.h5 g2c/ckpt-00000020.h5 1e-4
"$MTRAIN" "${FLAGS[@]}" --device cpu --steps 10 --ckpt-dir c2g >/dev/null
"$MTRAIN" "${FLAGS[@]}" --device cuda --steps 20 --ckpt-dir c2g >/dev/null
same_ckpt gpu/ckpt-00000020.h5 c2g/ckpt-00000020.h5 1e-4

# The same GPU command twice: bitwise the same (fixed-order reductions).
"$MTRAIN" "${FLAGS[@]}" --device cuda --steps 20 --ckpt-dir gpu2 >/dev/null
same_ckpt gpu/ckpt-00000020.h5 gpu2/ckpt-00000020.h5

# bf16 products train, and say so.
# Evaluated on its own training set: eval.h5 has other class centres.
"$MTRAIN" "${SMALL[@]}" --eval-data train.h5 --device cuda --precision bf16 --steps 30 \
	--ckpt-dir bf16 --metrics m.jsonl >log
grep -q "backend cuda bf16" log || fail "bf16 not reported"
acc=$(grep '"event":"eval"' m.jsonl | tail -n 1 | sed 's/.*"ema_acc":\([0-9.]*\).*/\1/')
awk -v a="$acc" 'BEGIN { exit !(a > 0.5) }' || fail "bf16 run EMA accuracy $acc"

# auto: every rank sees a GPU, so CUDA + NCCL, one rank per GPU.
ranks "$gpus" "${FLAGS[@]}" --device auto --steps 6 --ckpt-dir auto >log
grep -q "backend cuda, communicator nccl" log || fail "--device auto did not pick cuda"
# Under auto, one rank more than there are GPUs falls back to the CPU...
ranks $((gpus + 1)) "${FLAGS[@]}" --device auto --steps 6 --ckpt-dir auto2 >log
grep -q "two ranks would share a GPU: every rank computes on the CPU" log || fail "auto fallback"
# ...and under --device cuda it is an error naming both ranks and the GPU.
expect_status 2 ranks $((gpus + 1)) "${FLAGS[@]}" --device cuda --steps 6 --ckpt-dir over
grep -q "ranks 0 and 1 on .* would share GPU" last.err || { cat last.err; fail "no message for ranks > GPUs"; }
pass "GPU matches CPU; checkpoints cross; bf16; auto; one GPU per rank"
