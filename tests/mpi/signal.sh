# Slurm's early warning: SIGUSR1 to mpirun (forwarded to every rank) makes all
# ranks agree on one step, write a checkpoint and exit 0; resuming from it
# gives bitwise the run that was never stopped.
. "$(dirname "$0")/lib.sh"
make_data
FLAGS=("${SMALL[@]}" --eval-data none --log-every 1000)
# mpirun itself gets the signal, as from a batch script's trap; lib.sh's exit
# trap kills it should the test fail before it stops.
"$MPIRUN" --oversubscribe -np 2 "$MTRAIN" "${FLAGS[@]}" --steps 100000000 --ckpt-dir ck >log &
pid=$!
for _ in $(seq 100); do grep -q "^step " log && break; sleep 0.2; done
grep -q "^step " log || { kill -9 $pid; fail "training did not start"; }
kill -USR1 $pid
status=0
wait $pid || status=$?
[ $status = 0 ] || { cat log; fail "exit status $status after SIGUSR1"; }
grep -q "stopped by signal at step" log || { cat log; fail "no stop line"; }
step=$(sed -n 's/.*stopped by signal at step \([0-9]*\).*/\1/p' log)
[ "$step" -gt 0 ] && [ -f "$(printf 'ck/ckpt-%08d.h5' "$step")" ] || fail "no checkpoint at step $step"
end=$((step + 7))
ranks 2 "${FLAGS[@]}" --steps $end --ckpt-dir ck >/dev/null
ranks 2 "${FLAGS[@]}" --steps $end --ckpt-dir straight >/dev/null
same_ckpt "$(printf 'straight/ckpt-%08d.h5' $end)" "$(printf 'ck/ckpt-%08d.h5' $end)"
# During start-up, while a child process reads the data: mpirun signals
# each rank's whole process group, the reader must not die of it, and the
# job stops at its first step (MTRAIN_TEST_FAULT=slowreader: every read
# takes 2 s more). Both ranks' readers are waited for: a rank still being
# loaded (before its main sets the handler) dies of the signal, as any
# program does, and on a loaded machine one rank can start a second after
# the other.
MTRAIN_TEST_FAULT=slowreader "$MPIRUN" --oversubscribe -np 2 "$MTRAIN" "${FLAGS[@]}" \
	--steps 100000000 --ckpt-dir early >log 2>&1 &
pid=$!
for _ in $(seq 400); do [ "$(pgrep -c -f "^mtrain-reader")" -ge 2 ] && break; sleep 0.05; done
[ "$(pgrep -c -f "^mtrain-reader")" -ge 2 ] || { kill -9 $pid; cat log; fail "no reader process seen on each rank"; }
kill -USR1 $pid
status=0
wait $pid || status=$?
[ $status = 0 ] || { cat log; fail "exit status $status after SIGUSR1 during the data's read"; }
grep -q "stopped by signal at step 1;" log || { cat log; fail "no stop at step 1"; }
pass "SIGUSR1 at step $step: checkpoint, exit 0, bitwise resume; during the read of the data: stop at step 1"
