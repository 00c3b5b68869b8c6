# A rank that crashes outside any collective (MTRAIN_TEST_FAULT=crash:1:3):
# it prints one line naming itself and the signal, with a backtrace, and
# the whole job ends at once (Open MPI's own crash handler could hang and
# --comm-timeout, 300 s here, never fired).
. "$(dirname "$0")/../mpi/lib.sh"
make_data
start=$(date +%s)
export MTRAIN_TEST_FAULT=crash:1:3
expect_status 139 ranks 2 "${SMALL[@]}" --steps 1000 --ckpt-dir ck --comm-timeout 300
unset MTRAIN_TEST_FAULT
took=$(($(date +%s) - start))
[ "$took" -lt 30 ] || fail "the job took $took s to end after a rank crashed"
grep -q "^mtrain: error: rank 1 on .*: crashed (a bug: please report it); ending the job; signal 11$" last.err ||
	{ cat last.err; fail "no crash line naming rank 1 and signal 11"; }
pass "a crash on rank 1 ended the job in $took s with one line"
