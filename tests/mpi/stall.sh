# A rank that stops answering (SIGSTOP here; a hung node or a dead link on a
# cluster) does not hang the job: within --comm-timeout the rank left
# waiting names itself and the collective it waited in, and the job ends
# with a non-zero status.
. "$(dirname "$0")/lib.sh"
"$MKDATA" synth big.h5 50000 12 3 1
cat >pid_of_rank.sh <<'SH'
#!/bin/sh
echo $$ >"pid.$OMPI_COMM_WORLD_RANK"
exec "$@"
SH
chmod +x pid_of_rank.sh
"$MPIRUN" --oversubscribe -np 2 ./pid_of_rank.sh "$MTRAIN" --device cpu --data big.h5 \
	--eval-data none --layers 16,8 --batch 14 --steps 1000000 --log-every 1000000 \
	--comm-timeout 3 --ckpt-dir ck >out 2>err &
job=$!
for _ in $(seq 100); do [ -s pid.1 ] && grep -q '^data ' out && break; sleep 0.1; done
sleep 1
kill -STOP "$(cat pid.1)"
start=$SECONDS
while kill -0 $job 2>/dev/null && [ $((SECONDS - start)) -lt 60 ]; do sleep 0.2; done
kill -KILL "$(cat pid.1)" 2>/dev/null || true
kill -0 $job 2>/dev/null && fail "the job still runs 60 s after a rank stopped"
status=0
wait $job || status=$?
[ $status != 0 ] || fail "the job exited 0 after a rank stopped"
grep -q "^mtrain: error: rank 0 on .*: MPI .* did not complete within --comm-timeout 3 s" err ||
	{ cat err; fail "no line naming the waiting rank and the collective"; }
[ $((SECONDS - start)) -lt 20 ] || fail "the job took $((SECONDS - start)) s to end, timeout 3 s"
pass "a stopped rank ends the job in $((SECONDS - start)) s with a message"
