# Daemons a test starts (munged, slurmctld, slurmd), sourced after
# tests/mpi/lib.sh. The clean-up trap is set here, before the first daemon
# starts, and stops every daemon the test started whatever the path out: by
# its pid file, and by any process whose command line names $WORK (every
# daemon is given its config, socket or pid file there). A daemon that does
# not come up fails the test with one line naming it and the tail of its
# output and log.

DAEMON_PIDFILES=()

stop_daemons() {
	local f pid
	# A job still running (its processes are slurmd's children) goes first.
	[ -z "${job:-}" ] || scancel --quiet --full "$job" 2>/dev/null || true
	for f in "${DAEMON_PIDFILES[@]}"; do
		[ -s "$f" ] || continue
		pid=$(cat "$f")
		kill "$pid" 2>/dev/null || continue
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		kill -9 "$pid" 2>/dev/null || true
	done
	# One that died before writing its pid file, or forked again.
	pkill -9 -f -- "$WORK/" 2>/dev/null || true
}
trap 'stop_daemons; jobs -p | xargs -r kill -9 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT

# start_daemon NAME PIDFILE LOG CMD...: runs CMD, which forks NAME into the
# background; returns once NAME's pid file names a process that is still
# alive a moment later. Otherwise the test fails, naming NAME.
start_daemon() {
	local name=$1 pidfile=$2 log=$3 rc=0
	shift 3
	DAEMON_PIDFILES+=("$pidfile")
	"$@" >"$WORK/$name.start" 2>&1 || rc=$?
	for _ in $(seq 50); do
		if [ "$rc" = 0 ] && [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
			sleep 0.5 # a daemon that fails right after forking
			kill -0 "$(cat "$pidfile")" 2>/dev/null && return 0
			break
		fi
		[ "$rc" = 0 ] || break
		sleep 0.2
	done
	echo "FAIL: $name did not start (exit status $rc); the tail of its output and of $log:" >&2
	tail -n 12 "$WORK/$name.start" "$log" >&2 2>/dev/null || true
	exit 1
}
