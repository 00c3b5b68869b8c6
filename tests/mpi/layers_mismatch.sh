# Ranks started with different --layers abort together, exit status 2, with
# one line naming the first differing variable and both shapes; nothing is
# written and no rank hangs.
. "$(dirname "$0")/lib.sh"
make_data
expect_status 2 timeout 60 "$MPIRUN" --oversubscribe -np 1 "$MTRAIN" "${SMALL[@]}" --ckpt-dir ck \
	: -np 1 "$MTRAIN" "${SMALL[@]}" --layers 16,9 --ckpt-dir ck
grep -q "dense_1/kernel: rank 0 \[16,8\] vs rank 1 \[16,9\]" last.err ||
	{ cat last.err; fail "message does not name dense_1/kernel and both shapes"; }
[ "$(grep -c '^mtrain: error' last.err)" = 1 ] || fail "not exactly one error line"
[ ! -e ck ] || fail "a checkpoint folder was written"
pass "mismatched ranks abort with the naming message"
