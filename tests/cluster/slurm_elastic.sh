# jobs/slurm.sbatch's elastic restart on a three-node Slurm in the simulated
# cluster (tests/cluster/slurm_lib.sh): a job of 300 steps with a
# checkpoint every 50, submitted with --nodes=2-3 and 2 tasks a node
# (ELASTIC_MIN_NODES=2), gets the three idle nodes, 6 ranks; node3 loses
# power (slurmd and every other process of it killed) while its rank 4
# waits after step 130 (the test fault "hang"). The allocation outlives it
# (--no-kill), the script's jobs/elastic.sh asks each node with a one-task
# step, and starts the job again on node1 and node2, 4 ranks, from step
# 100: the job completes with one restart, within 1e-5 of the same job
# unbroken on 6 ranks.
. "$(dirname "$0")/slurm_lib.sh"
# node3's death noticed by slurmctld within seconds, not the 300 s default.
slurm_cluster_up 3 "SlurmdTimeout=10"
"$MKDATA" synth train.h5 8400 12 3 11
STEPS=300
FLAGS=("${SMALL[@]}" --eval-data none --log-every 10 --steps $STEPS --ckpt-every 50 --comm-timeout 60)
FINAL=ckpt-$(printf %08d $STEPS).h5
job=$(on_node 1 env MTRAIN_TEST_FAULT=hang:4:130 sbatch --parsable --nodes=2-3 --ntasks-per-node=2 \
	--time=10 --output="$WORK/job-%j.out" \
	--export=ALL,MTRAIN="$MTRAIN",MTRAIN_ELASTIC="$REPO/jobs/elastic.sh",ELASTIC_MIN_NODES=2 \
	--chdir="$WORK" "$REPO/jobs/slurm.sbatch" "${FLAGS[@]}" --ckpt-dir ck)
echo "submitted job $job"
out=job-$job.out
wait_for 60 grep -qs "^step 120/" "$out" || { cat "$out"; slurm_logs; fail "the job did not reach step 120"; }
grep -qx "nodes 3: node1 ranks 0 1; node2 ranks 2 3; node3 ranks 4 5" "$out" || { cat "$out"; fail "the job is not on the three nodes"; }
sleep 1 # steps 121 to 130; node3's rank then waits
kill -9 $(ip netns pids "$CL_TAG-n3") 2>/dev/null || true
killed=$(date +%s%N)
restarted() { sed -n '/^restart 1: /,$p' "$out" | grep -q "^step 110/"; }
wait_for 90 restarted || { cat "$out"; slurm_logs; fail "the job did not go on after node3's loss"; }
took=$(( ($(date +%s%N) - killed) / 1000000 ))
done_() { [ -s "ck/$FINAL" ] && ! on_node 1 scontrol show job "$job" | grep -q "JobState=RUNNING"; }
wait_for 120 done_ || { cat "$out"; on_node 1 scontrol show job "$job"; slurm_logs; fail "the job did not complete"; }
grep -q "^elastic: restart 1 of at most 3: lost node3 (mpirun exited with status [1-9][0-9]*); going on with 2 node(s): node1:2,node2:2; from ck/ckpt-00000100.h5$" "$out" ||
	{ cat "$out"; fail "the wrapper's restart line"; }
grep -q "^restart 1: lost node3; resuming on 2 nodes (4 ranks) from step 100$" "$out" ||
	{ cat "$out"; fail "mtrain's restart line"; }
! grep -q "restart 2" "$out" || { cat "$out"; fail "more than one restart"; }
# The same job unbroken on six ranks.
cl_mpirun node1:3,node2:3 "${FLAGS[@]}" --ckpt-dir whole >/dev/null 2>err || { cat err; fail "the unbroken run"; }
"$CMP" --norm "whole/$FINAL" "ck/$FINAL" 1e-5 || fail "the elastic job's weights differ from the unbroken run's"
stop_daemons
cluster_gone
pass "Slurm, --nodes=2-3 on 3 idle nodes, 2 tasks each, at least 2: node3 lost at step 130, the job went on on node1 and node2 (4 ranks) from step 100 ($took ms from the kill to its step 110), completed within 1e-5 of the unbroken run"
