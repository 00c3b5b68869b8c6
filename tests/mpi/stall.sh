# --comm-timeout on the MPI path. A whole job suspended for longer than the
# timeout (scontrol suspend, preemption) carries on when resumed. One rank
# that stops answering (SIGSTOP here; a hung node or a dead link on a
# cluster) does not hang the job: within the timeout the rank left waiting
# names itself and the collective it waited in, and the job ends non-zero.
. "$(dirname "$0")/lib.sh"
"$MKDATA" synth big.h5 50000 12 3 1
cat >pid_of_rank.sh <<'SH'
#!/bin/sh
echo $$ >"pid.$OMPI_COMM_WORLD_RANK"
exec "$@"
SH
chmod +x pid_of_rank.sh
# start NAME: a run that would take years, in the background; its ranks'
# pids in pid.0 and pid.1 once it trains.
start() {
	rm -f pid.0 pid.1
	"$MPIRUN" --oversubscribe -np 2 ./pid_of_rank.sh "$MTRAIN" --device cpu --data big.h5 \
		--eval-data none --layers 16,8 --batch 14 --steps 100000000000 \
		--log-every 100000000000 --comm-timeout 3 --ckpt-dir "$1" >"$1.out" 2>"$1.err" &
	job=$!
	for _ in $(seq 200); do
		[ -s pid.0 ] && [ -s pid.1 ] && grep -q '^data ' "$1.out" && return 0
		sleep 0.1
	done
	fail "$1: the job did not start training within 20 s"
}
# ends_within SECONDS: whether the job has ended by then.
ends_within() {
	local t0=$SECONDS
	while kill -0 $job 2>/dev/null && [ $((SECONDS - t0)) -lt "$1" ]; do sleep 0.2; done
	! kill -0 $job 2>/dev/null
}

start suspended
sleep 1
kill -STOP "$(cat pid.0)" "$(cat pid.1)"
sleep 5
kill -CONT "$(cat pid.0)" "$(cat pid.1)"
sleep 2
kill -0 $job 2>/dev/null || { cat suspended.err; fail "a job suspended past the timeout died"; }
kill -USR1 $job
ends_within 30 || fail "the resumed job did not stop on USR1"
status=0
wait $job || status=$?
[ $status = 0 ] || { cat suspended.err; fail "the resumed job exited $status"; }

start stalled
sleep 1
kill -STOP "$(cat pid.1)"
t0=$SECONDS
ends_within 60 || { kill -KILL "$(cat pid.1)"; fail "the job still runs 60 s after a rank stopped"; }
took=$((SECONDS - t0))
kill -KILL "$(cat pid.1)" 2>/dev/null || true
status=0
wait $job || status=$?
[ $status != 0 ] || fail "the job exited 0 after a rank stopped"
grep -q "^mtrain: error: rank 0 on .*: MPI .* did not complete within --comm-timeout 3 s; not in it: rank 1 (no answer: stopped or dead); ending the job" stalled.err ||
	{ cat stalled.err; fail "no line naming the waiting rank, the collective and the stopped one"; }
[ $took -lt 20 ] || fail "the job took $took s to end, timeout 3 s"
# A rank alive but elsewhere (busy outside any collective: the test's hang
# fault sleeps after step 3) is named with its last completed step.
MTRAIN_TEST_FAULT=hang:1:3 "$MPIRUN" --oversubscribe -np 2 "$MTRAIN" --device cpu --data big.h5 \
	--eval-data none --layers 16,8 --batch 14 --steps 100 --comm-timeout 3 --ckpt-dir busy \
	>busy.out 2>busy.err && fail "the job with a busy rank exited 0"
grep -q "did not complete within --comm-timeout 3 s; not in it: rank 1 (last completed step 3, not in a collective)" busy.err ||
	{ cat busy.err; fail "the busy rank was not named with its step"; }
pass "a suspended job carries on; a stopped rank ends the job in $took s, named; a busy one is named with its step"
