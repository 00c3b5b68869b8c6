# jobs/slurm.sbatch on a real Slurm: this test starts munged, slurmctld and
# slurmd on this machine (one node, its cores), submits the batch script,
# sends it Slurm's early warning (USR1 to the batch shell, as --signal=B:USR1
# does), and checks the whole story: mtrain checkpoints and stops, the script
# requeues the job, the requeued job resumes from the checkpoint and
# finishes, bitwise equal to a run never stopped. Needs root (daemons);
# skips (77) when Slurm is not installed or cannot run here. Every daemon it
# started is stopped on the way out (tests/slurm/daemons.sh).
#
# MTRAIN_SLURM_BREAK=slurmd (or slurmctld) gives that daemon a config with a
# line it cannot parse: tests/slurm/bringup.sh checks the failure is named
# and nothing is left running.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../mpi/lib.sh"
. "$HERE/daemons.sh"
command -v slurmctld >/dev/null && command -v munged >/dev/null || { echo "SKIPPED: no Slurm"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIPPED: starting Slurm's daemons needs root"; exit 77; }
# Slurm 22.05's slurmd stops at start-up without one ("No filesystem
# mounted on /sys/fs/cgroup"), even with TaskPlugin=task/none.
grep -q ' /sys/fs/cgroup ' /proc/mounts ||
	{ echo "SKIPPED: no cgroup file system at /sys/fs/cgroup: slurmd cannot start here"; exit 77; }
REPO=$(cd "$HERE/../.." && pwd)
host=$(hostname -s)
cpus=$(nproc)

# A private cluster: config, state and sockets under $WORK.
mkdir -p state spool munge
cat >slurm.conf <<CONF
ClusterName=mtraintest
SlurmctldHost=$host
SlurmUser=root
SlurmctldPort=$((20000 + RANDOM % 10000))
SlurmdPort=$((30000 + RANDOM % 10000))
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
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
SlurmdLogFile=$WORK/slurmd.log
AuthType=auth/munge
CryptoType=crypto/munge
MinJobAge=600
SchedulerParameters=sched_interval=1
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$WORK/slurm.conf
munge_sock=$WORK/munge/munge.socket
# Slurm's munge plugin finds the socket through this setting.
sed -i "s|^AuthType=auth/munge|AuthType=auth/munge\nAuthInfo=socket=$munge_sock|" slurm.conf
# conf_of DAEMON: the config it reads; a broken copy when the test asks.
conf_of() {
	[ "${MTRAIN_SLURM_BREAK:-}" = "$1" ] || { echo "$SLURM_CONF"; return; }
	{ cat slurm.conf; echo "NodeName=broken CPUs=many"; } >"$1-broken.conf"
	echo "$WORK/$1-broken.conf"
}
start_daemon munged "$WORK/munge/munged.pid" "$WORK/munge/munged.log" \
	munged --force --socket="$munge_sock" --pid-file="$WORK/munge/munged.pid" \
	--log-file="$WORK/munge/munged.log" --seed-file="$WORK/munge/seed"
start_daemon slurmctld "$WORK/slurmctld.pid" "$WORK/slurmctld.log" \
	slurmctld -f "$(conf_of slurmctld)"
start_daemon slurmd "$WORK/slurmd.pid" "$WORK/slurmd.log" slurmd -f "$(conf_of slurmd)"
for i in $(seq 60); do
	sinfo -h -o %T 2>/dev/null | grep -Eq '^idle' && break
	sleep 1
	[ "$i" = 60 ] && { cat slurmctld.log slurmd.log; fail "the node did not come up"; }
done

# 8,400 rows: 600 steps an epoch, so few epoch-end checkpoints.
"$MKDATA" synth train.h5 8400 12 3 11
# About 5 s of training: long enough that USR1 lands mid-run.
FLAGS=("${SMALL[@]}" --layers 64,64 --eval-data none --log-every 2000)
STEPS=200000
job=$(sbatch --parsable --ntasks=2 --time=10 --output="$WORK/job-%j.out" \
	--export=ALL,MTRAIN="$MTRAIN" --chdir="$WORK" "$REPO/jobs/slurm.sbatch" \
	"${FLAGS[@]}" --steps $STEPS --ckpt-dir ck)
echo "submitted job $job"
# wait_for SECONDS CMD...: polls CMD once a second.
wait_for() {
	local n=$1
	shift
	for _ in $(seq "$n"); do "$@" && return 0; sleep 1; done
	return 1
}
wait_for 60 grep -q "^step " job-"$job".out || { cat job-*.out slurmd.log; fail "the job did not start training"; }
scancel --batch --signal=USR1 "$job"
wait_for 60 grep -q "requeueing job $job" job-"$job".out || { cat job-"$job".out; fail "the script did not requeue"; }
step=$(sed -n 's/.*stopped by signal at step \([0-9]*\).*/\1/p' job-"$job".out)
[ -n "$step" ] && [ "$step" -lt $STEPS ] || { cat job-"$job".out; fail "mtrain did not stop early on USR1"; }
# The requeued job resumes from that checkpoint and runs to the end. Slurm
# holds a requeued job back for a while; the test need not wait for that.
completed() { scontrol show job "$job" | grep -q "JobState=COMPLETED"; }
pending() { scontrol show job "$job" | grep -q "JobState=PENDING"; }
wait_for 30 pending || fail "the requeued job is not pending"
scontrol update JobId="$job" StartTime=now
wait_for 240 completed || { cat job-"$job".out; scontrol show job "$job"; fail "requeued job did not complete"; }
cat job-"$job".out
grep -q "resumed from ck/ckpt-$(printf %08d "$step").h5 at step $step" job-"$job".out ||
	fail "the requeued job did not resume from step $step"
# Bitwise the run that was never stopped.
ranks 2 "${FLAGS[@]}" --steps $STEPS --ckpt-dir straight >/dev/null
same_ckpt "straight/ckpt-$(printf %08d $STEPS).h5" "ck/ckpt-$(printf %08d $STEPS).h5"
pass "Slurm: USR1 at step $step, checkpoint, requeue, resume, bitwise equal to an unbroken run"
