# Bad data deep inside a data file, which start-up no longer reads whole (it
# reads a seeded sample of 64 rows): the reader checks every row as it reads
# it. A NaN row and a label out of range that only training reaches, a file
# truncated while training and a forged layout each stop the job with one
# line naming the file and the row (or the defect), exit status 2, and the
# newest checkpoint intact: resumed on the good file, the run ends bitwise as
# the run that never met the defect. --verify-data on finds the NaN row at
# start-up; evaluation rows are checked as they are read; a chunked and
# compressed copy of the file (read through HDF5, not by offset) trains to
# the same weights and finds the same row.
. "$(dirname "$0")/../mpi/lib.sh"
MKROWS=$MTRAIN_BUILD/tests/mkrows
command -v h5repack >/dev/null || skip_or_fail "h5repack (hdf5-tools) is not installed"

N=600 BATCH=20 SEED=5 # 30 steps an epoch
"$MKDATA" synth good.h5 $N 12 3 21
"$MKDATA" synth eval.h5 90 12 3 22
ARGS=(--device cpu --eval-data none --layers 16,8 --batch $BATCH --seed $SEED --log-every 100
	--ckpt-every 5 --steps 30)
ranks 2 "${ARGS[@]}" --data good.h5 --ckpt-dir clean >/dev/null

# A row the start-up sample does not read, reached late in epoch 0.
"$MKROWS" sample $N $SEED 64 >sampled
ROW= POS=
for r in $(seq 0 $((N - 1))); do
	grep -qx "$r" sampled && continue
	p=$("$MKROWS" where $N $SEED "$r")
	if [ "$p" -ge 300 ] && [ "$p" -lt 500 ]; then ROW=$r POS=$p; break; fi
done
[ -n "$ROW" ] || fail "no row outside the sample between positions 300 and 500"
STEP=$((POS / BATCH + 1))
KEPT=$(((STEP - 1) / 5 * 5))

# bad_row FILE PATTERN: training on FILE stops at STEP with one line holding
# PATTERN; the newest checkpoint is KEPT's, and resuming it on good.h5 ends
# as the clean run.
bad_row() {
	local file=$1 pattern=$2 dir=ck-${1%.h5}
	expect_job_error "$file: $pattern \(the batch of step $STEP; stopping, the newest checkpoint, step $KEPT, is intact\)" \
		ranks 2 "${ARGS[@]}" --data "$file" --ckpt-dir "$dir"
	newest=$(ls "$dir" | grep '^ckpt-' | sort | tail -n 1)
	[ "$newest" = "$(printf 'ckpt-%08d.h5' $KEPT)" ] || fail "$file: newest checkpoint $newest, want step $KEPT"
	expect_status 0 ranks 2 "${ARGS[@]}" --data good.h5 --ckpt-dir "$dir"
	same_ckpt clean/ckpt-00000030.h5 "$dir/ckpt-00000030.h5"
	pass "$file: row $ROW stops step $STEP in one line; resumed from step $KEPT, bitwise"
}

cp good.h5 nan.h5
"$MKROWS" poke nan.h5 nan "$ROW"
bad_row nan.h5 "x\[$ROW, 0\] is NaN; inputs must be finite"
cp good.h5 label.h5
"$MKROWS" poke label.h5 label "$ROW" 7
bad_row label.h5 "y\[$ROW\] = 7 is not a class id \(the model has 3 classes, 0 to 2\)"

# The same through HDF5: chunked (100 rows) and compressed.
h5repack -l x:CHUNK=100x12 -l y:CHUNK=100 -f GZIP=1 good.h5 gz.h5
h5dump -pH gz.h5 | grep -q DEFLATE || fail "h5repack wrote no compressed dataset"
ranks 2 "${ARGS[@]}" --data gz.h5 --ckpt-dir ck-gz >/dev/null
same_ckpt clean/ckpt-00000030.h5 ck-gz/ckpt-00000030.h5
h5repack -l x:CHUNK=100x12 -l y:CHUNK=100 -f GZIP=1 nan.h5 gznan.h5
bad_row gznan.h5 "x\[$ROW, 0\] is NaN; inputs must be finite"

# --verify-data on reads every row at start-up: the same row, before anything
# is written.
expect_job_error "nan.h5: x\[$ROW, 0\] is NaN; inputs must be finite$" \
	ranks 2 "${ARGS[@]}" --data nan.h5 --ckpt-dir ck-verify --verify-data on
[ ! -e ck-verify ] || fail "--verify-data on: a checkpoint folder was made"
pass "--verify-data on: found at start-up, nothing written"

# An evaluation row: found when evaluation reads it (the end of epoch 1).
cp eval.h5 evalnan.h5
"$MKROWS" poke evalnan.h5 nan 77
expect_job_error "evalnan.h5: x\[77, 0\] is NaN; inputs must be finite; found while evaluating" \
	ranks 3 "${ARGS[@]}" --data good.h5 --eval-data evalnan.h5 --ckpt-dir ck-eval
pass "evaluation row: one line"

# A forged layout: x's address in its layout message moved 1 TiB on, below
# HDF5. Start-up says so; nothing is written.
cp good.h5 forged.h5
"$MKROWS" forge forged.h5
expect_job_error "forged.h5: dataset 'x' lies past the end of the file \(bytes [0-9]+ to [0-9]+ of [0-9]+\): truncated or forged" \
	ranks 2 "${ARGS[@]}" --data forged.h5 --ckpt-dir ck-forged
[ ! -e ck-forged ] || fail "forged layout: a checkpoint folder was made"
pass "forged layout: one line, nothing written"

# Truncated while training: a long run, cut to half once it has saved a
# checkpoint. The next batch's read says so in one line; the newest
# checkpoint is intact and resumes on the whole file.
cp good.h5 cut.h5
LONG=(--device cpu --eval-data none --layers 16,8 --batch $BATCH --seed $SEED --log-every 100000
	--ckpt-every 2000 --steps 100000000 --data cut.h5 --ckpt-dir ck-cut)
ranks 2 "${LONG[@]}" >cut.out 2>cut.err &
job=$!
# (The folder's listing, not a glob's names: the run writes a checkpoint at
# each epoch's end and removes all but the newest 5 as it goes.)
saved() { ls ck-cut 2>/dev/null | grep -q '^ckpt-[0-9]*\.h5$'; }
for _ in $(seq 600); do
	saved && break
	sleep 0.1
done
saved || fail "the long run saved no checkpoint in 60 s"
truncate -s $(($(stat -c %s cut.h5) / 2)) cut.h5
got=0
wait $job || got=$?
[ "$got" = 2 ] || { cat cut.out cut.err; fail "truncated while training: exit status $got, want 2"; }
[ "$(grep -c '^mtrain: error' cut.err)" = 1 ] &&
	grep -qE "^mtrain: error: .*cut.h5: the file (changed while mtrain was reading it \([0-9]+ bytes when opened, now [0-9]+\)|ends at byte)" cut.err ||
	{ cat cut.err; fail "truncated while training: want one line naming cut.h5"; }
newest=$(ls ck-cut | grep '^ckpt-' | sort | tail -n 1)
"$MTRAIN" inspect "ck-cut/$newest" >/dev/null || fail "truncated while training: $newest does not read"
pass "truncated while training: one line ($(sed 's/^mtrain: error: //' cut.err | cut -c1-90)...), $newest intact"
