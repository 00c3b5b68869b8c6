# The same command twice gives bitwise-identical checkpoints: every variable,
# shadow and slot, checked by ckpt_compare and by HDF5's own h5diff.
. "$(dirname "$0")/lib.sh"
make_data
for run in a b; do
	ranks 2 "${SMALL[@]}" --steps 15 --ckpt-every 5 --ckpt-dir $run >/dev/null
done
for step in 00000005 00000010 00000015; do
	same_ckpt a/ckpt-$step.h5 b/ckpt-$step.h5
done
for ds in dense.kernel dense_1.kernel.ExponentialMovingAverage dense_2.bias.Adam_1 global_step; do
	h5diff a/ckpt-00000015.h5 b/ckpt-00000015.h5 /$ds /$ds || fail "h5diff: /$ds differs"
done
# A different seed must not compare equal (the comparison can fail).
ranks 2 "${SMALL[@]}" --steps 15 --seed 6 --ckpt-dir c >/dev/null
"$CMP" a/ckpt-00000015.h5 c/ckpt-00000015.h5 >/dev/null 2>&1 && fail "seeds 5 and 6 compared equal"
pass "two runs bitwise identical"
