# Elastic restarts (jobs/elastic.sh) on the simulated cluster
# (tests/cluster/lib.sh), one rank per node, three nodes, a job of 300
# steps with a checkpoint every 50:
# - node3 loses power (every process in it killed, its holder too, so that
#   nothing answers there) while its rank waits after step 130 (the test
#   fault "hang", 30 s): the wrapper starts the job again on node1 and
#   node2 from step 100, once; it completes within 1e-5 of the same job
#   unbroken, its metrics hold one restart event and, reading later
#   records over earlier ones of a step (as jobs/plot.sh does), every
#   progress step once;
# - node3's network is cut instead: rank 0's watchdog names its rank after
#   --comm-timeout, the wrapper ends mpirun (which waits for node3's
#   daemon) and goes on without node3, with the same result;
# - node3 and then node2 lose power: with ELASTIC_MIN_NODES=2 (the nodes
#   in a hostfile, ELASTIC_HOSTFILE), and with ELASTIC_MAX_RESTARTS=1, one
#   restart, then one line naming the second loss and the limit, status 1;
#   the newest checkpoint resumes on node1 alone;
# - bad settings of the wrapper: one line, status 2.
# The test prints what a loss cost: from the kill to the wrapper's restart
# line, and to the restarted job's step 110.
. "$(dirname "$0")/lib.sh"
REPO=$(cd "$(dirname "$0")/../.." && pwd)
"$MKDATA" synth train.h5 8400 12 3 11
"$MKDATA" synth eval.h5 30 12 3 12
STEPS=300
RUN=(--device cpu --data train.h5 --eval-data eval.h5 --layers 16,8 --batch 14 --seed 5
	--log-every 10 --steps $STEPS --ckpt-every 50)
FINAL=ckpt-$(printf %08d $STEPS).h5

# poll SECONDS COMMAND...: COMMAND until it succeeds, every 0.1 s.
poll() {
	local n=$(($1 * 10))
	shift
	for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
	return 1
}
# after_restart N STEP: the restarted job (restart N) printed step STEP.
after_restart() { sed -n "/^restart $1: /,\$p" "$TAG.log" | grep -q "^step $2/"; }
# power_off I: every process of node I, its holder included.
power_off() { kill -9 $(ip netns pids "$CL_TAG-n$1") 2>/dev/null || true; }
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# start TAG MIN FAULT MTRAIN_FLAGS...: the wrapper from node1 over the three
# nodes (NODES_ENV: how it is told them, ELASTIC_HOSTS by default), in the
# background ($job), its output in TAG.log and TAG.err,
# checkpoints in TAG/, metrics in TAG.jsonl; returns at step 120. The fault
# reaches the ranks on other nodes through the agent's environment.
start() {
	TAG=$1
	local min=$2 fault=$3
	shift 3
	on_node 1 env "${NODES_ENV:-ELASTIC_HOSTS=node1:1,node2:1,node3:1}" ELASTIC_MIN_NODES="$min" \
		ELASTIC_MAX_RESTARTS="${MAX_RESTARTS:-2}" ELASTIC_GRACE=5 ELASTIC_PROBE="$WORK/agent" MPIRUN="$MPIRUN" \
		MPIRUN_ARGS="--mca plm_rsh_agent $WORK/agent --mca btl tcp,self --mca btl_tcp_if_include $CL_NET.0/24 --mca oob_tcp_if_include $CL_NET.0/24" \
		MTRAIN="$MTRAIN" MTRAIN_TEST_FAULT="$fault" timeout 180 bash "$REPO/jobs/elastic.sh" \
		"${RUN[@]}" --ckpt-dir "$TAG" --metrics "$TAG.jsonl" "$@" >"$TAG.log" 2>"$TAG.err" &
	job=$!
	# Progress lines sum over the ranks: with a rank waiting after step
	# 130, step 120's is the last; steps 121 to 130 take about 0.1 s.
	poll 60 grep -q "^step 120/" "$TAG.log" || { cat "$TAG.log" "$TAG.err"; fail "$TAG: the job did not reach step 120"; }
}
# finish: waits for $job; it must end with status 0.
finish() {
	local rc=0
	wait "$job" || rc=$?
	[ "$rc" = 0 ] || { cat "$TAG.log" "$TAG.err"; fail "$TAG: the elastic job ended with status $rc"; }
}
# timed_restart SINCE: waits for restart 1 and its step 110; sets detected
# and first_step (ms from SINCE, date +%s%N).
timed_restart() {
	poll 60 grep -q "^elastic: restart 1 " "$TAG.err" || { cat "$TAG.log" "$TAG.err"; fail "$TAG: no restart line in 60 s"; }
	detected=$(ms_since "$1")
	poll 60 after_restart 1 110 || { cat "$TAG.log" "$TAG.err"; fail "$TAG: the restarted job took no step in 60 s"; }
	first_step=$(ms_since "$1")
}
# one_restart_without_node3: what a completed job with one restart, from
# step 100, without node3, shows.
one_restart_without_node3() {
	grep -q "^elastic: restart 1 of at most 2: lost node3 (mpirun exited with status [1-9][0-9]*); going on with 2 node(s): node1:1,node2:1; from $TAG/ckpt-00000100.h5$" "$TAG.err" ||
		{ cat "$TAG.err"; fail "$TAG: the wrapper's restart line"; }
	grep -q "^restart 1: lost node3; resuming on 2 nodes (2 ranks) from step 100$" "$TAG.log" ||
		{ cat "$TAG.log"; fail "$TAG: mtrain's restart line"; }
	grep -q "resumed from $TAG/ckpt-00000100.h5 at step 100" "$TAG.log" || { cat "$TAG.log"; fail "$TAG: not resumed from step 100"; }
	! grep -q "restart 2" "$TAG.log" "$TAG.err" || { cat "$TAG.log" "$TAG.err"; fail "$TAG: more than one restart"; }
	# The metrics: one restart event, at step 100, on 2 ranks; the record,
	# later lines over earlier ones of a step, has every progress step once,
	# and those after the restart take up at the step after 100.
	[ "$(grep -c '"event":"restart"' "$TAG.jsonl")" = 1 ] || { cat "$TAG.jsonl"; fail "$TAG: want one restart event"; }
	grep -q '^{"event":"restart","step":100,"restart":1,"lost":"node3","ranks":2,"nodes":2}$' "$TAG.jsonl" ||
		{ grep restart "$TAG.jsonl"; fail "$TAG: the restart event"; }
	local steps after
	steps=$(sed -n 's/^{"event":"train","step":\([0-9]*\),.*/\1/p' "$TAG.jsonl" | sort -n | uniq | paste -sd' ')
	[ "$steps" = "$(seq 10 10 $STEPS | paste -sd' ')" ] || fail "$TAG: progress steps in the record: $steps"
	after=$(sed -n '/"event":"restart"/,$p' "$TAG.jsonl" | sed -n 's/^{"event":"train","step":\([0-9]*\),.*/\1/p' | head -n 1)
	[ "$after" = 110 ] || fail "$TAG: the first progress record after the restart is step $after, not 110"
	"$CMP" --norm "whole/$FINAL" "$TAG/$FINAL" 1e-5 ||
		fail "$TAG: the elastic job's weights differ from the unbroken run's by more than 1e-5"
}

# The wrapper's own bad input: one line naming it, status 2, nothing run.
bad_env() {
	local want=$1
	shift
	expect_status 2 env "$@" MTRAIN="$MTRAIN" bash "$REPO/jobs/elastic.sh" "${RUN[@]}" --ckpt-dir bad
	[ "$(wc -l <last.err)" = 1 ] && grep -q "^elastic: error: $want" last.err ||
		{ cat last.err; fail "elastic.sh with $*: want one line 'elastic: error: $want'"; }
}
bad_env "ELASTIC_HOSTS is not set" ELASTIC_HOSTS=
bad_env "ELASTIC_HOSTS='node1:2,node2:0': 'node2:0' is not NODE or NODE:RANKS" ELASTIC_HOSTS=node1:2,node2:0
bad_env "ELASTIC_MIN_NODES=3: want 1 to 2" ELASTIC_HOSTS=node1,node2 ELASTIC_MIN_NODES=3
bad_env "ELASTIC_MAX_RESTARTS='two' is not a whole number" ELASTIC_HOSTS=node1 ELASTIC_MAX_RESTARTS=two
printf '# two nodes\nnode1 slots=2\nnode2 slots=0\n' >hostfile
bad_env "ELASTIC_HOSTFILE=hostfile: 'node2:0' is not NODE or NODE:RANKS" ELASTIC_HOSTFILE=hostfile
bad_env "ELASTIC_HOSTFILE=missing: cannot read it" ELASTIC_HOSTFILE=missing
bad_env "node node9 does not answer ELASTIC_PROBE (false node9 true) before the job starts" \
	ELASTIC_HOSTS=node9 ELASTIC_PROBE=false
[ ! -e bad ] || fail "elastic.sh's bad input: a checkpoint folder was made"

# The same job unbroken, three ranks.
cluster_up 3
cl_mpirun node1:1,node2:1,node3:1 "${RUN[@]}" --ckpt-dir whole >/dev/null 2>err ||
	{ cat err; fail "the unbroken run"; }

# node3 loses power while its rank waits after step 130.
start dead 2 hang:2:130 --comm-timeout 60
sleep 1
power_off 3
t0=$(date +%s%N)
timed_restart "$t0"
finish
one_restart_without_node3
dead_figures="kill to restart line $detected ms, to step 110 $first_step ms"
cluster_gone

# node3's network cut while its rank waits after step 130: the watchdog.
cluster_up 3
start cut 2 hang:2:130 --comm-timeout 10
sleep 1
ip -n "$CL_TAG-n3" link set eth0 down
t0=$(date +%s%N)
timed_restart "$t0"
# --comm-timeout, ELASTIC_GRACE and the restart's own few seconds.
[ "$detected" -le 30000 ] || fail "cut: the restart line came $detected ms after the cut (--comm-timeout 10 s, grace 5 s)"
finish
grep -q "^elastic: mpirun still runs 5 s after a rank ended the job: ending it$" "$TAG.err" ||
	{ cat "$TAG.err"; fail "cut: the wrapper did not end the waiting mpirun"; }
one_restart_without_node3
cut_figures="cut to restart line $detected ms, to step 110 $first_step ms"
cluster_gone

# two_losses TAG MIN MAX LINE: node3 lost, then node2 while its rank waits
# after step 200 of the restarted job; the wrapper ends with status 1 and
# one error line, LINE, the newest checkpoint step 150's.
two_losses() {
	local tag=$1 min=$2 max=$3 line=$4 rc=0 newest
	cluster_up 3
	MAX_RESTARTS=$max start "$tag" "$min" hang:1:200 --comm-timeout 60
	power_off 3
	poll 60 after_restart 1 190 || { cat "$tag.log" "$tag.err"; fail "$tag: the restarted job did not reach step 190"; }
	sleep 1
	power_off 2
	wait "$job" || rc=$?
	[ "$rc" = 1 ] || { cat "$tag.log" "$tag.err"; fail "$tag: the job ended with status $rc, not 1"; }
	[ "$(grep -c '^elastic: error' "$tag.err")" = 1 ] && grep -qxF "$line" "$tag.err" ||
		{ cat "$tag.err"; fail "$tag: want the one line '$line'"; }
	newest=$(ls "$tag" | tail -n 1)
	[ "$newest" = ckpt-00000150.h5 ] || { ls "$tag"; fail "$tag: the newest checkpoint is $newest, not step 150's"; }
	cluster_gone
}
# Below the minimum, the nodes in a hostfile; then the newest checkpoint
# resumes on node1 alone.
printf 'node1 slots=1\nnode2 slots=1 # the second\nnode3 slots=1\n' >nodes.txt
NODES_ENV=ELASTIC_HOSTFILE=nodes.txt two_losses below 2 2 \
	"elastic: error: lost node2: 1 node(s) left, fewer than ELASTIC_MIN_NODES=2; ending (the newest checkpoint is intact: it resumes on any number of ranks)"
# The restarts spent.
two_losses spent 1 1 \
	"elastic: error: lost node2 after 1 restart(s): ELASTIC_MAX_RESTARTS=1 reached; ending (the newest checkpoint is intact: it resumes on any number of ranks)"
cluster_up 1
newest=ckpt-00000150.h5
cl_mpirun node1:1 "${RUN[@]}" --ckpt-dir below >below-resume.log 2>err || { cat err; fail "below: the resume on node1"; }
grep -q "resumed from below/$newest at step 150" below-resume.log || { cat below-resume.log; fail "below: no resume from $newest"; }
"$CMP" --norm "whole/$FINAL" "below/$FINAL" 1e-5 || fail "below: the resumed job's weights differ from the unbroken run's"
cluster_gone
pass "restarted once without node3 from step 100, each within 1e-5 of the unbroken run with one restart event and every progress step once: power lost ($dead_figures), network cut (--comm-timeout 10, grace 5: $cut_figures); node3 then node2 lost: with 2 nodes the minimum, and with 1 restart the most, ended with one line each, status 1; resumed on node1 alone from step 150"
