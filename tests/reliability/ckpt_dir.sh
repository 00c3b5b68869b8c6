# One job per --ckpt-dir, and a folder that cannot trip a run later:
# a second job in a folder another job holds stops at once (exit 2) naming
# the holder, and the first is unharmed; a job killed with SIGKILL leaves a
# lock the next job takes over; something that is not a file under a
# checkpoint's name is refused at start; a folder with thousands of
# checkpoint names is listed whole; a --ckpt-dir near 1,000 characters
# saves and resumes.
. "$(dirname "$0")/../mpi/lib.sh"
make_data
# 8,400 rows: 600 steps an epoch, long enough to be caught running.
"$MKDATA" synth big.h5 8400 12 3 11
LONG=(--device cpu --data big.h5 --eval-data none --layers 64,64 --batch 14 --seed 5 --log-every 100000)
ranks 2 "${LONG[@]}" --steps 1000000 --ckpt-dir ck >a.out 2>&1 &
a=$!
for _ in $(seq 100); do [ -s ck/.mtrain.lock ] && break; sleep 0.1; done
[ -s ck/.mtrain.lock ] || { cat a.out; fail "job A took no lock"; }
expect_status 2 ranks 2 "${LONG[@]}" --steps 10 --ckpt-dir ck
grep -q "^mtrain: error: --ckpt-dir ck is in use by another mtrain job ($(hostname) [0-9]" last.err ||
	{ cat last.err; fail "job B did not name the holder"; }
[ "$(grep -c '^mtrain: error' last.err)" = 1 ] || { cat last.err; fail "want one line"; }
# USR1 to job A's ranks themselves (what Slurm's early warning does).
pkill -USR1 -f "^$MTRAIN .*--ckpt-dir ck\$"
wait $a || { cat a.out; fail "job A did not end well after job B"; }
grep -q "stopped by signal" a.out || { cat a.out; fail "job A did not stop on USR1"; }
[ ! -e ck/.mtrain.lock ] || fail "job A left its lock"
ls ck/.ckpt-* 2>/dev/null && fail "a temporary file was left"
newest=$(ls ck | tail -n 1)
"$MTRAIN" inspect "ck/$newest" >/dev/null || fail "job A's checkpoint is not whole"

# SIGKILL with the lock held: the next job takes it over.
ranks 2 "${LONG[@]}" --steps 1000000 --ckpt-dir killed >/dev/null 2>&1 &
for _ in $(seq 100); do [ -s killed/.mtrain.lock ] && break; sleep 0.1; done
pkill -9 -f "^$MTRAIN .*--ckpt-dir killed\$" || true
wait 2>/dev/null || true
[ -s killed/.mtrain.lock ] || fail "the killed job's lock file is gone: nothing to take over"
ranks 2 "${SMALL[@]}" --steps 2 --ckpt-dir killed --resume never >/dev/null ||
	fail "the lock of a killed job was not taken over"

# A folder under a checkpoint's name: refused at start, nothing trained.
mkdir -p trap/ckpt-00000006.h5
expect_status 2 ranks 2 "${SMALL[@]}" --steps 6 --ckpt-dir trap
grep -q "trap/ckpt-00000006.h5 is not a file" last.err || { cat last.err; fail "a folder under a checkpoint's name"; }

# 4,500 names that are not checkpoints, and the real one: resume finds it
# (the listing stopped at 4,096 names).
ranks 2 "${SMALL[@]}" --steps 6 --ckpt-dir many >/dev/null
mv many/ckpt-00000006.h5 many/ckpt-00009000.h5
for i in $(seq 1 4500); do : >"many/ckpt-$(printf %08d "$i").h5"; done
ranks 2 "${SMALL[@]}" --steps 12 --ckpt-dir many >log 2>err
grep -q "resumed from many/ckpt-00009000.h5" log || { cat log err | tail; fail "the newest checkpoint of 4,501 was not found"; }

# A --ckpt-dir of about 1,000 characters: paths were cut at 1,024 and resume
# silently restarted at step 0.
deep=.
for _ in 1 2 3 4 5; do deep=$deep/$(printf 'd%.0s' $(seq 199)); done
mkdir -p "$deep"
[ "${#deep}" -gt 990 ] || fail "the deep folder is only ${#deep} characters"
ranks 2 "${SMALL[@]}" --steps 6 --ckpt-dir "$deep" >/dev/null
ranks 2 "${SMALL[@]}" --steps 12 --ckpt-dir "$deep" >log
grep -q "resumed from .*/ckpt-00000006.h5 at step 6" log || { cat log; fail "no resume from a deep --ckpt-dir"; }
pass "one job per --ckpt-dir, a killed job's lock taken over, names checked, 4,501 listed, deep folders"
