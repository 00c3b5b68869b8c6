# Two nodes of the simulated cluster (tests/cluster/lib.sh), two ranks each,
# with Open MPI over TCP between them as between real hosts: every rank is
# placed on its node with its local rank; the weights after 20 steps equal a
# one-node run of 4 ranks; data read from each node's own /tmp works, and a
# copy that differs, or is missing, on one node stops the job with one line
# naming the rank, its node and the file; --zero 1 over MPI's own
# reduce-scatter and all-gather trains the same run; checkpoints on the shared file
# system resume on other nodes bitwise, and a --ckpt-dir that only rank 0's
# node sees works for save and resume.
. "$(dirname "$0")/lib.sh"
cluster_up 2
make_data
RUN=(--device cpu --eval-data eval.h5 --layers 16,8 --batch 14 --seed 5 --log-every 5)

cl_mpirun node1:2,node2:2 "${RUN[@]}" --data train.h5 --steps 20 --ckpt-dir two >log 2>err ||
	{ cat log err; fail "2 nodes x 2 ranks did not run"; }
grep -qx "nodes 2: node1 ranks 0 1; node2 ranks 2 3" log || { cat log; fail "the ranks' placement"; }
ranks 4 "${RUN[@]}" --data train.h5 --steps 20 --ckpt-dir one >log1
grep -qx "nodes 1: $(hostname) ranks 0 1 2 3" log1 || { cat log1; fail "one node's placement"; }
same_ckpt one/ckpt-00000020.h5 two/ckpt-00000020.h5 1e-5
# ZeRO-1 across nodes: --zero auto keeps it off (MPI's reduce-scatter and
# all-gather cost 1.2-1.8 times its all-reduce here: bench/bench_collectives);
# --zero 1 takes MPI's, and trains the same run.
grep -q "^zero 0: " log || { cat log; fail "--zero auto sharded across nodes"; }
cl_mpirun node1:2,node2:2 "${RUN[@]}" --data train.h5 --steps 20 --zero 1 --ckpt-dir zero >log 2>err ||
	{ cat log err; fail "--zero 1 on 2 nodes did not run"; }
grep -q "^zero 1: " log || { cat log; fail "--zero 1 did not shard"; }
"$CMP" --norm two/ckpt-00000020.h5 zero/ckpt-00000020.h5 1e-6 || fail "--zero 1 across nodes"

# Node-local data: each node's own copy in its private /tmp.
for i in 1 2; do on_node "$i" cp train.h5 /tmp/train.h5; done
cl_mpirun node1:2,node2:2 "${RUN[@]}" --data /tmp/train.h5 --steps 20 --ckpt-dir local >/dev/null 2>err ||
	{ cat err; fail "node-local copies"; }
same_ckpt one/ckpt-00000020.h5 local/ckpt-00000020.h5 1e-5
# A copy that differs on node2: one line naming rank 2, node2 and the file.
"$MKDATA" synth other.h5 84 12 3 99
on_node 2 cp other.h5 /tmp/train.h5
expect_status 2 cl_mpirun node1:2,node2:2 "${RUN[@]}" --data /tmp/train.h5 --steps 20 --ckpt-dir bad
[ "$(grep -c '^mtrain: error' last.err)" = 1 ] || { cat last.err; fail "a differing copy: want one line"; }
grep -q "^mtrain: error: rank 2 on node2: --data /tmp/train.h5 is not rank 0's file" last.err ||
	{ cat last.err; fail "a differing copy: the line does not name rank 2, node2 and the file"; }
# No copy on node2.
on_node 2 rm /tmp/train.h5
expect_status 2 cl_mpirun node1:2,node2:2 "${RUN[@]}" --data /tmp/train.h5 --steps 20 --ckpt-dir bad
[ "$(grep -c '^mtrain: error' last.err)" = 1 ] || { cat last.err; fail "a missing copy: want one line"; }
grep -q "^mtrain: error: rank 2 on node2: /tmp/train.h5: cannot open data file" last.err ||
	{ cat last.err; fail "a missing copy: the line does not name rank 2, node2 and the path"; }
[ ! -e bad ] || fail "output written for a bad data file"

# Checkpoints on the shared file system: a job of 10 steps on node1,
# resumed on node2 to 20, equals an unbroken run of as many ranks.
cl_mpirun node1:2 "${RUN[@]}" --data train.h5 --steps 10 --ckpt-dir moved >/dev/null
cl_mpirun node2:2 "${RUN[@]}" --data train.h5 --steps 20 --ckpt-dir moved >log 2>err ||
	{ cat log err; fail "resume on node2"; }
grep -q "resumed from moved/ckpt-00000010.h5 at step 10" log || { cat log err; fail "no resume on node2"; }
grep -qx "nodes 1: node2 ranks 0 1" log || { cat log; fail "the resumed job's placement"; }
cl_mpirun node1:1,node2:1 "${RUN[@]}" --data train.h5 --steps 20 --ckpt-dir whole >/dev/null
same_ckpt whole/ckpt-00000020.h5 moved/ckpt-00000020.h5
# A --ckpt-dir only rank 0's node sees (node1's /tmp): rank 0 writes and
# reads the checkpoints and broadcasts what it read.
cl_mpirun node1:1,node2:1 "${RUN[@]}" --data train.h5 --steps 10 --ckpt-dir /tmp/ck >/dev/null 2>err ||
	{ cat err; fail "a --ckpt-dir on rank 0's node only"; }
cl_mpirun node1:1,node2:1 "${RUN[@]}" --data train.h5 --steps 20 --ckpt-dir /tmp/ck >log 2>err ||
	{ cat log err; fail "resume from a --ckpt-dir on rank 0's node only"; }
grep -q "resumed from /tmp/ck/ckpt-00000010.h5 at step 10" log || { cat log err; fail "no resume from node1's /tmp"; }
on_node 1 cp /tmp/ck/ckpt-00000020.h5 node1-only.h5
same_ckpt whole/ckpt-00000020.h5 node1-only.h5
! on_node 2 test -e /tmp/ck || fail "node2 has a --ckpt-dir"
cluster_gone
pass "2 nodes x 2 ranks (cluster up in $CL_UP_MS ms, down in $CL_DOWN_MS ms): placed by node, equal to 1 node x 4 ranks; node-local data; a differing or missing copy named; resumed on another node bitwise; a --ckpt-dir on rank 0's node only"
