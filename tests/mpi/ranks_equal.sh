# 1, 2, 3 and 4 ranks with the same global batch (14: uneven on 3 and 4 ranks)
# reach the same weights, shadows and slots after 20 SGD steps, to 1e-5
# relative (float sums differ only in order).
. "$(dirname "$0")/lib.sh"
make_data
for n in 1 2 3 4; do
	ranks $n "${SMALL[@]}" --optimizer sgd --lr 0.2 --steps 20 --ckpt-dir ck$n >log$n
	[ -f ck$n/ckpt-00000020.h5 ] || fail "$n ranks wrote no checkpoint at step 20"
	grep -q "^mtrain .*: $n rank" log$n || fail "log does not report $n ranks"
done
for n in 2 3 4; do
	same_ckpt ck1/ckpt-00000020.h5 ck$n/ckpt-00000020.h5 1e-5
done
# The check has teeth: one more step is not "the same".
ranks 1 "${SMALL[@]}" --optimizer sgd --lr 0.2 --steps 21 --ckpt-dir ck21 >/dev/null
"$CMP" ck1/ckpt-00000020.h5 ck21/ckpt-00000021.h5 1e-5 >/dev/null 2>&1 &&
	fail "a different run compared equal"
pass "1-4 ranks agree to 1e-5 after 20 SGD steps"
