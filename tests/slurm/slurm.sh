# jobs/slurm.sbatch on a real Slurm: this test starts munged, slurmctld and
# slurmd on this machine (one node, its cores), submits the batch script,
# sends it Slurm's early warning (USR1 to the batch shell, as --signal=B:USR1
# does), and checks the whole story: mtrain checkpoints and stops, the script
# requeues the job, the requeued job resumes from the checkpoint and
# finishes, bitwise equal to a run never stopped. Needs root (daemons);
# skips (skip_or_fail: fails under MTRAIN_NO_SKIP=1) when Slurm is not
# installed or cannot run here. Every daemon it
# started is stopped on the way out (tests/slurm/daemons.sh).
#
# MTRAIN_SLURM_BREAK=slurmd (or slurmctld) gives that daemon a config with a
# line it cannot parse: tests/slurm/bringup.sh checks the failure is named
# and nothing is left running.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../mpi/lib.sh"
. "$HERE/daemons.sh"
command -v slurmctld >/dev/null && command -v munged >/dev/null ||
	skip_or_fail "no Slurm (jobs/setup.sh --tests installs slurm-wlm and munge)"
[ "$(id -u)" = 0 ] || skip_or_fail "starting Slurm's daemons needs root"
# Slurm 22.05's slurmd stops at start-up without one ("No filesystem
# mounted on /sys/fs/cgroup"), even with TaskPlugin=task/none.
grep -q ' /sys/fs/cgroup ' /proc/mounts ||
	skip_or_fail "no cgroup file system at /sys/fs/cgroup: slurmd cannot start here"
REPO=$(cd "$HERE/../.." && pwd)
host=$(hostname -s)
cpus=$(nproc)

# A private cluster: config, state and sockets under $WORK.
mkdir -p spool
slurm_conf "$host" "$WORK/spool" "NodeName=$host CPUs=$cpus"
# conf_of DAEMON: the config it reads; a broken copy when the test asks.
conf_of() {
	[ "${MTRAIN_SLURM_BREAK:-}" = "$1" ] || { echo "$SLURM_CONF"; return; }
	{ cat slurm.conf; echo "NodeName=broken CPUs=many"; } >"$1-broken.conf"
	echo "$WORK/$1-broken.conf"
}
start_munged
start_daemon slurmctld "$WORK/slurmctld.pid" "$WORK/slurmctld.log" \
	slurmctld -f "$(conf_of slurmctld)"
start_daemon slurmd "$WORK/slurmd-$host.pid" "$WORK/slurmd-$host.log" slurmd -f "$(conf_of slurmd)"
for i in $(seq 60); do
	sinfo -h -o %T 2>/dev/null | grep -Eq '^idle' && break
	sleep 1
	[ "$i" = 60 ] && { cat slurmctld.log slurmd-*.log; fail "the node did not come up"; }
done

# 8,400 rows: 600 steps an epoch, so few epoch-end checkpoints.
"$MKDATA" synth train.h5 8400 12 3 11
# About 5 s of training: long enough that USR1 lands mid-run.
FLAGS=("${SMALL[@]}" --layers 64,64 --eval-data none --log-every 2000)
STEPS=200000
job=$(sbatch --parsable --ntasks=2 --time=10 --output="$WORK/job-%j.out" \
	--export=ALL,MTRAIN="$MTRAIN",MTRAIN_ELASTIC="$REPO/jobs/elastic.sh" --chdir="$WORK" "$REPO/jobs/slurm.sbatch" \
	"${FLAGS[@]}" --steps $STEPS --ckpt-dir ck)
echo "submitted job $job"
wait_for 60 grep -q "^step " job-"$job".out || { cat job-*.out slurmd-*.log; fail "the job did not start training"; }
scancel --batch --signal=USR1 "$job"
wait_for 60 grep -q "requeueing job $job" job-"$job".out || { cat job-"$job".out; fail "the script did not requeue"; }
step=$(sed -n 's/.*stopped by signal at step \([0-9]*\).*/\1/p' job-"$job".out)
[ -n "$step" ] && [ "$step" -lt $STEPS ] || { cat job-"$job".out; fail "mtrain did not stop early on USR1"; }
# The requeued job resumes from that checkpoint and runs to the end. Slurm
# holds a requeued job back for a while; the test need not wait for that.
completed() { scontrol show job "$job" | grep -q "JobState=COMPLETED"; }
pending() { scontrol show job "$job" | grep -q "JobState=PENDING"; }
wait_for 30 pending || fail "the requeued job is not pending"
release_requeued "$job" scontrol
wait_for 240 completed || { cat job-"$job".out; scontrol show job "$job"; fail "requeued job did not complete"; }
cat job-"$job".out
grep -q "resumed from ck/ckpt-$(printf %08d "$step").h5 at step $step" job-"$job".out ||
	fail "the requeued job did not resume from step $step"
# Bitwise the run that was never stopped.
ranks 2 "${FLAGS[@]}" --steps $STEPS --ckpt-dir straight >/dev/null
same_ckpt "straight/ckpt-$(printf %08d $STEPS).h5" "ck/ckpt-$(printf %08d $STEPS).h5"
pass "Slurm: USR1 at step $step, checkpoint, requeue, resume, bitwise equal to an unbroken run"
