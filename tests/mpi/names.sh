# The checkpoint holds exactly one EMA shadow per trainable variable, all
# canonically named, and no name anywhere carries a replica index.
. "$(dirname "$0")/lib.sh"
make_data
ranks 3 "${SMALL[@]}" --layers 16,8,4 --steps 6 --ckpt-dir ck >/dev/null
"$CMP" --names ck/ckpt-00000006.h5 || fail "names are not canonical"
"$MTRAIN" inspect ck/ckpt-00000006.h5 >inspect.txt
grep -qi replica inspect.txt && fail "a name carries 'replica'"
want="dense/kernel dense/bias dense_1/kernel dense_1/bias dense_2/kernel dense_2/bias dense_3/kernel dense_3/bias"
for v in $want; do
	for name in $v $v/ExponentialMovingAverage $v/Adam $v/Adam_1; do
		[ "$(awk -v n="$name" '$1 == n' inspect.txt | wc -l)" = 1 ] || fail "$name: not exactly once"
	done
done
[ "$(grep -c /ExponentialMovingAverage inspect.txt)" = 8 ] || fail "not 8 shadows"
pass "one canonical shadow per variable, no replica index"
