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

# slurm_conf CONTROLLER SPOOL NODE_LINE...: a private cluster's slurm.conf in
# $WORK (state, pid files, logs and munge's socket there; slurmd's by node
# name, %n), for the controller CONTROLLER ("host" or "host(address)"), with
# slurmd's spool SPOOL and NODE_LINEs ("NodeName=... CPUs=..."), all in one
# partition. Sets SLURM_CONF.
slurm_conf() {
	local controller=$1 spool=$2
	shift 2
	mkdir -p "$WORK/state" "$WORK/munge"
	{
		cat <<CONF
ClusterName=mtraintest
SlurmctldHost=$controller
SlurmUser=root
SlurmctldPort=$((20000 + RANDOM % 10000))
SlurmdPort=$((30000 + RANDOM % 10000))
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd-%n.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd-%n.log
AuthType=auth/munge
AuthInfo=socket=$WORK/munge/munge.socket,cred_expire=10
CryptoType=crypto/munge
MinJobAge=600
SchedulerParameters=sched_interval=1
CONF
		local names=() line
		for line in "$@"; do
			echo "$line State=UNKNOWN"
			line=${line#NodeName=}
			names+=("${line%% *}")
		done
		echo "PartitionName=test Nodes=$(IFS=,; echo "${names[*]}") Default=YES MaxTime=INFINITE State=UP"
	} >"$WORK/slurm.conf"
	export SLURM_CONF=$WORK/slurm.conf
}

# start_munged: the cluster's munged, its socket in $WORK (shared by every
# node, as a file system is).
start_munged() {
	start_daemon munged "$WORK/munge/munged.pid" "$WORK/munge/munged.log" \
		munged --force --socket="$WORK/munge/munge.socket" --pid-file="$WORK/munge/munged.pid" \
		--log-file="$WORK/munge/munged.log" --seed-file="$WORK/munge/seed"
}

# wait_for SECONDS CMD...: polls CMD once a second until it succeeds; 1 if
# it never does.
wait_for() {
	local n=$1
	shift
	for _ in $(seq "$n"); do "$@" && return 0; sleep 1; done
	return 1
}

# release_requeued JOB SCONTROL...: lets a requeued JOB (PENDING) start now
# instead of after the hold Slurm gives it, running scontrol as SCONTROL
# says (e.g. "on_node 1 scontrol"). A second past the requeue first: a new
# credential from the same second as the old one's revocation is refused
# ("Job credential revoked", the job FAILED); and again while it still waits.
release_requeued() {
	local job=$1
	shift
	sleep 2
	for _ in 1 2 3; do
		"$@" show job "$job" | grep -q "JobState=PENDING" || break
		"$@" update JobId="$job" StartTime=now
		sleep 5
	done
}
