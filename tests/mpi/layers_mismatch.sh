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
# Any other option that differs between ranks would make them take other
# branches: stopped before anything else, naming the option.
expect_status 2 timeout 60 "$MPIRUN" --oversubscribe -np 1 "$MTRAIN" "${SMALL[@]}" --ckpt-dir ck \
	: -np 1 "$MTRAIN" "${SMALL[@]}" --ckpt-dir ck --ema-sync-every 2
grep -q "rank 1 on .*: started with other options than rank 0: rank 0 has 'ema-sync-every = 100', rank 1 'ema-sync-every = 2'" last.err ||
	{ cat last.err; fail "differing options not named"; }
[ ! -e ck ] || fail "a checkpoint folder was written"
# A checkpoint folder written by another model (--layers changed, --ckpt-dir
# kept): one error line naming both models and what to do, not one line per
# variable; exit status 2 and nothing written.
ranks 2 "${SMALL[@]}" --steps 6 --ckpt-dir kept >/dev/null
ls -l --time-style=full-iso kept >before.ls
expect_status 2 ranks 2 "${SMALL[@]}" --layers 16,9 --steps 12 --ckpt-dir kept
grep -q "^mtrain: error: kept/ckpt-00000006.h5, the newest checkpoint in kept, was written by another model (dense:16,relu,dense:8,relu,dense; this run: dense:16,relu,dense:9,relu,dense): give this run another --ckpt-dir, or --resume never to start afresh$" last.err ||
	{ cat last.err; fail "another model's folder: not the one line naming both models"; }
[ "$(grep -c '^mtrain: error' last.err)" = 1 ] || { cat last.err; fail "another model's folder: not exactly one error line"; }
ls -l --time-style=full-iso kept | cmp -s - before.ls || fail "another model's folder: something was written"
# A model so unlike the checkpoint's that the list of its mismatched
# variables runs past 4 KiB: the same one line (the reader's child once
# could not send so long an error back, and the run took the checkpoint
# for a damaged one, skipped it and started afresh beside it).
expect_status 2 ranks 2 "${SMALL[@]}" --model "60*(dense:4,relu),dense" --steps 12 --ckpt-dir kept
grep -q "^mtrain: error: kept/ckpt-00000006.h5, the newest checkpoint in kept, was written by another model" last.err ||
	{ cat last.err; fail "a very different model's folder: not the one line naming both models"; }
ls -l --time-style=full-iso kept | cmp -s - before.ls || fail "a very different model's folder: something was written"
pass "mismatched ranks abort with the naming message; another model's folder is one line"
