# jobs/slurm.sbatch on a two-node Slurm in the simulated cluster
# (tests/cluster/lib.sh): slurmctld on node1, a slurmd on each node, munged
# shared. The unchanged batch script runs mpirun (through jobs/elastic.sh)
# inside the allocation
# (which starts node2's ranks through srun); USR1 partway through makes
# every rank on both nodes stop at one step with a checkpoint, the script
# requeues the job, and the requeued job resumes and ends bitwise equal to
# an unbroken run. Skips like tests/slurm/slurm.sh where Slurm cannot run.
. "$(dirname "$0")/slurm_lib.sh"
slurm_cluster_up 2

# 8,400 rows: 600 steps an epoch; USR1 lands after step 100 (the first
# progress line), some 30 s of steps (about 12 ms each across the two
# nodes here) before the end.
"$MKDATA" synth train.h5 8400 12 3 11
FLAGS=("${SMALL[@]}" --layers 64,64 --eval-data none --log-every 100)
STEPS=3000
job=$(on_node 1 sbatch --parsable --nodes=2 --ntasks-per-node=1 --time=10 --output="$WORK/job-%j.out" \
	--export=ALL,MTRAIN="$MTRAIN",MTRAIN_ELASTIC="$REPO/jobs/elastic.sh" --chdir="$WORK" "$REPO/jobs/slurm.sbatch" \
	"${FLAGS[@]}" --steps $STEPS --ckpt-dir ck)
echo "submitted job $job"
wait_for 60 grep -qs "^step " "job-$job.out" || { cat job-*.out slurmd-*.log; fail "the job did not start training"; }
grep -qx "nodes 2: node1 ranks 0; node2 ranks 1" "job-$job.out" || { cat "job-$job.out"; fail "the job is not on both nodes"; }
on_node 1 scancel --batch --signal=USR1 "$job"
wait_for 60 grep -qs "requeueing job $job" "job-$job.out" || { cat "job-$job.out"; fail "the script did not requeue"; }
step=$(sed -n 's/.*stopped by signal at step \([0-9]*\).*/\1/p' "job-$job.out")
[ -n "$step" ] && [ "$step" -lt $STEPS ] || { cat "job-$job.out"; fail "mtrain did not stop early on USR1"; }
state() { on_node 1 scontrol show job "$job" | grep -q "JobState=$1"; }
wait_for 30 state PENDING || fail "the requeued job is not pending"
release_requeued "$job" on_node 1 scontrol
wait_for 240 state COMPLETED || { cat "job-$job.out"; on_node 1 scontrol show job "$job"; slurm_logs; fail "the requeued job did not complete"; }
grep -q "resumed from ck/ckpt-$(printf %08d "$step").h5 at step $step" "job-$job.out" ||
	{ cat "job-$job.out"; fail "the requeued job did not resume from step $step"; }
# Bitwise the run that was never stopped, on the same two nodes.
cl_mpirun node1:1,node2:1 "${FLAGS[@]}" --steps $STEPS --ckpt-dir straight >/dev/null
same_ckpt "straight/ckpt-$(printf %08d $STEPS).h5" "ck/ckpt-$(printf %08d $STEPS).h5"
stop_daemons
cluster_gone
pass "Slurm on 2 nodes (up in $CL_UP_MS + $SLURM_UP_MS ms): USR1 at step $step, both nodes checkpointed, requeued, resumed, bitwise equal to an unbroken run"
