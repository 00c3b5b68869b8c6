# 1, 2, 3 and 4 ranks with the same global batch (14: uneven on 3 and 4 ranks)
# reach the same weights, shadows and slots after 20 SGD steps, to 3e-5
# relative (float sums differ only in order). How far they drift depends on
# the BLAS kernels the CPU gets: on a 2-core Intel Xeon (OpenBLAS 0.3.21)
# the weights agree to 3.2e-6 and the shadows, which average every step's
# rounding, to 1.4e-5 (3 ranks); a learning rate 1e-4 larger moves them by
# 4e-3, over a hundred times the tolerance.
. "$(dirname "$0")/lib.sh"
make_data
for n in 1 2 3 4; do
	ranks $n "${SMALL[@]}" --optimizer sgd --lr 0.2 --steps 20 --ckpt-dir ck$n >log$n
	[ -f ck$n/ckpt-00000020.h5 ] || fail "$n ranks wrote no checkpoint at step 20"
	grep -q "^mtrain .*: $n rank" log$n || fail "log does not report $n ranks"
done
for n in 2 3 4; do
	same_ckpt ck1/ckpt-00000020.h5 ck$n/ckpt-00000020.h5 3e-5
done
# The check has teeth: a learning rate 1e-4 larger moves the weights past
# 3e-5, and a NaN is never equal, not even to itself.
ranks 1 "${SMALL[@]}" --optimizer sgd --lr 0.20002 --steps 20 --ckpt-dir nudged >/dev/null
"$CMP" ck1/ckpt-00000020.h5 nudged/ckpt-00000020.h5 3e-5 >/dev/null 2>&1 &&
	fail "a run with another learning rate compared equal"
"$MKDATA" badckpt ck1/ckpt-00000020.h5 nan.h5 nan
"$CMP" nan.h5 nan.h5 3e-5 >/dev/null 2>&1 && fail "a NaN compared equal"
"$CMP" nan.h5 nan.h5 >/dev/null 2>&1 && fail "a NaN compared bitwise equal"
pass "1-4 ranks agree to 3e-5 after 20 SGD steps"
