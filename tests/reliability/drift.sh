# --check-replicas: a bit flipped in one rank's weights (the test's fault
# switch, MTRAIN_TEST_FAULT=flip:rank:step) is found at the next comparison:
# one line naming the step, the rank and the variable, exit 1, and no
# checkpoint of the replicas that disagree. Without the fault the same run
# compares weights and, at every checkpoint, the EMA shadows (rank 0's,
# broadcast), and finishes.
. "$(dirname "$0")/../mpi/lib.sh"
make_data
ranks 2 "${SMALL[@]}" --steps 12 --check-replicas 2 --ckpt-dir ok >log ||
	{ cat log; fail "a run without a fault did not finish"; }
# At a checkpoint the comparison covers the EMA shadows, which every rank
# holds as rank 0 broadcast them: with no evaluation before it (which would
# sync them too), a broadcast that does not happen is a drift.
NO_EVAL=("${SMALL[@]}")
NO_EVAL[5]=none # --eval-data
ranks 2 "${NO_EVAL[@]}" --ema-sync-every 3 --check-replicas 1 --steps 6 --ckpt-dir shadows >log 2>&1 ||
	{ cat log; fail "the shadows differ across ranks at a checkpoint (no broadcast?)"; }
# --check-replicas keeps whole replicas (--zero auto: 0): under ZeRO-1 each
# step's all-gather would overwrite a drifted copy of another rank's shard.
grep -q "^zero 0: " log || { cat log; fail "--check-replicas did not keep whole replicas"; }
ranks 2 "${SMALL[@]}" --steps 2 --check-replicas 2 --zero 1 --ckpt-dir z1 >log 2>&1
grep -q "warning: --check-replicas with --zero 1" log || { cat log; fail "no warning with --zero 1"; }
export MTRAIN_TEST_FAULT=flip:1:3
expect_status 1 ranks 2 "${SMALL[@]}" --steps 12 --check-replicas 2 --ckpt-dir bad
[ "$(grep -c '^mtrain: error' last.err)" = 1 ] || { cat last.err; fail "want one line"; }
grep -q "replicas drifted at step 4: rank 1's weights of dense/kernel differ from rank 0's" last.err ||
	{ cat last.err; fail "the drift line"; }
[ -z "$(ls bad 2>/dev/null)" ] || { ls bad; fail "a checkpoint was written"; }
# A flip just before a checkpoint (step 6 ends the epoch) is found there.
export MTRAIN_TEST_FAULT=flip:1:6
expect_status 1 ranks 2 "${SMALL[@]}" --steps 12 --check-replicas 100 --ckpt-dir bad6
grep -q "replicas drifted at step 6: rank 1's weights of dense/kernel" last.err || { cat last.err; fail "at a checkpoint"; }
[ ! -e bad6/ckpt-00000006.h5 ] || fail "the checkpoint of drifted replicas was written"
# Without --check-replicas the flip goes unnoticed: the check is what finds it.
ranks 2 "${SMALL[@]}" --steps 12 --ckpt-dir blind >/dev/null || fail "unchecked run"
unset MTRAIN_TEST_FAULT
pass "a flipped bit on rank 1 found at the next comparison and at a checkpoint, named, exit 1"
