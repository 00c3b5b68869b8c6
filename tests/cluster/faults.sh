# Node faults on the simulated cluster (tests/cluster/lib.sh), one rank per
# node, mid-run:
# - node2 dies (every process in its namespace killed): the job ends in
#   bounded time with Open MPI's message naming node2; the newest
#   checkpoint loads and a rerun on node1 resumes from it;
# - node2 drops off the network (its link set down): rank 0 waits in a
#   collective, names itself, the collective and rank 1 within
#   --comm-timeout, and its processes end instead of hanging (mpirun,
#   waiting for node2's daemon, is ended by the test).
. "$(dirname "$0")/lib.sh"
cluster_up 2
make_data
RUN=(--device cpu --eval-data eval.h5 --layers 16,8 --batch 14 --seed 5 --log-every 50
	--data train.h5 --steps 1000000 --comm-timeout 10)

# start_job DIR: the long job in the background ($job), once it has written
# a checkpoint into DIR (steps taken: the ranks' own links are up; the lock
# file comes before that, at the start).
start_job() {
	cl_mpirun node1:1,node2:1 "${RUN[@]}" --ckpt-dir "$1" >log 2>err &
	job=$!
	for _ in $(seq 150); do compgen -G "$1/ckpt-*.h5" >/dev/null && return 0; sleep 0.2; done
	cat log err
	fail "the job wrote no checkpoint in 30 s"
}
# end_job LIMIT: waits for $job; fails unless it ended with an error within
# LIMIT seconds. Sets took.
end_job() {
	local rc=0 start
	start=$(date +%s)
	wait "$job" || rc=$?
	took=$(($(date +%s) - start))
	[ "$rc" != 0 ] || { cat log err; fail "the job ended with status 0 after a node fault"; }
	[ "$took" -le "$1" ] || { cat log err; fail "the job took $took s to end after a node fault"; }
}

start_job dead
holder=$(cat node2.pid)
for p in $(ip netns pids "$CL_TAG-n2"); do
	[ "$p" = "$holder" ] || kill -9 "$p" 2>/dev/null || true
done
end_job 60
# Open MPI names node2 one of two ways, by what it notices first: a rank's
# lost peer ("Peer host: node2") or the node's daemon ("Remote daemon: ...
# on node node2"), as the kill reaches one or the other first.
grep -Eq "Peer host: *node2|Remote daemon: .* on node node2" err ||
	{ cat err; fail "the dead node is not named"; }
newest=$(ls dead | tail -n 1)
"$MTRAIN" inspect "dead/$newest" >/dev/null || fail "the newest checkpoint dead/$newest does not load"
step=$((10#${newest:5:8}))
on_node 1 timeout 120 "$MPIRUN" --host node1:2 "$MTRAIN" "${RUN[@]}" --steps $((step + 6)) \
	--ckpt-dir dead >log 2>err || { cat log err; fail "the rerun on node1"; }
grep -q "resumed from dead/$newest" log || { cat log err; fail "the rerun did not resume from dead/$newest"; }
pass "node2 killed: the job ended in $took s naming node2; resumed from $newest on node1"

# node2 off the network: rank 0 names itself, the collective and rank 1
# after --comm-timeout, and the ranks on node1 end. mpirun itself then waits
# for node2's unreachable daemon (docs/clusters.md), so the test ends it. No keepalives
# on mpirun's links: with them (5 + 3 x 2 s) ORTE sometimes gave up on node2
# first and ended the job before rank 0 said anything, and once mpirun had
# sent node2 the abort, TCP retransmitted for minutes whatever they were.
start_job cut
ip -n "$CL_TAG-n2" link set eth0 down
cut=$(date +%s)
said="^mtrain: error: rank 0 on node1: MPI .* did not complete within --comm-timeout 10 s; not in it: rank 1 (no answer: stopped or dead); ending the job"
for _ in $(seq 150); do grep -q "$said" err && break; sleep 0.2; done
grep -q "$said" err || { cat log err; fail "rank 0 did not name itself, the collective and rank 1 within 30 s"; }
took=$(($(date +%s) - cut))
# node1's mtrain processes: none left within 10 s of the words
ranks_on_node1() {
	local pids
	pids=$(ip netns pids "$CL_TAG-n1" | paste -sd, -)
	if [ -z "$pids" ]; then echo 0; else ps -o comm= -p "$pids" | grep -cx mtrain || true; fi
}
for _ in $(seq 50); do [ "$(ranks_on_node1)" = 0 ] && break; sleep 0.2; done
[ "$(ranks_on_node1)" = 0 ] || fail "rank 0 still runs 10 s after naming the fault"
cluster_gone
wait "$job" 2>/dev/null || true
pass "node2 off the network: rank 0 named the collective and rank 1 $took s after the cut (--comm-timeout 10) and ended"
