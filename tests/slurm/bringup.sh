# A daemon that cannot start fails the Slurm test with one line naming it,
# and leaves nothing running: slurm.sh is run with slurmctld, then slurmd,
# given a config line they cannot parse (MTRAIN_SLURM_BREAK). Skips (77)
# where slurm.sh itself skips, and fails where it cannot run under
# MTRAIN_NO_SKIP=1.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../mpi/lib.sh"
for daemon in slurmctld slurmd; do
	mkdir "$daemon"
	rc=0
	TMPDIR=$WORK/$daemon MTRAIN_SLURM_BREAK=$daemon timeout 120 bash "$HERE/slurm.sh" \
		>"$daemon.out" 2>&1 || rc=$?
	[ "$rc" = 77 ] && { cat "$daemon.out"; exit 77; }
	grep -q '^FAIL: cannot run here: ' "$daemon.out" && { cat "$daemon.out"; exit 1; }
	[ "$rc" = 1 ] || { cat "$daemon.out"; fail "broken $daemon: exit status $rc, want 1"; }
	grep -q "^FAIL: $daemon did not start" "$daemon.out" ||
		{ cat "$daemon.out"; fail "broken $daemon: the failure does not name it"; }
	grep -q 'CPUs value "many" is not a valid number' "$daemon.out" ||
		{ cat "$daemon.out"; fail "broken $daemon: the tail of its output is missing"; }
	left=$(pgrep -a -f -- "$WORK/$daemon/" || true)
	[ -z "$left" ] || { pkill -9 -f -- "$WORK/$daemon/"; fail "broken $daemon: still running after the test: $left"; }
	[ -z "$(ls -A "$daemon")" ] || fail "broken $daemon: the test left $(ls "$daemon")"
done
pass "a daemon that cannot start is named, with its output, and nothing is left running"
