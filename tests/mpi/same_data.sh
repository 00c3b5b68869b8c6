# Ranks on different nodes read files of the same name that need not be the
# same files. One that differs from rank 0's (rows, content, or the eval
# set's shape) stops the job at start-up with one line naming the rank, not
# a hang or a run on inconsistent data.
. "$(dirname "$0")/lib.sh"
make_data
mkdir -p rows content evalrows
"$MKDATA" synth rows/train.h5 98 12 3 11
"$MKDATA" synth content/train.h5 84 12 3 99
"$MKDATA" synth evalrows/eval.h5 60 12 3 12
cp eval.h5 rows/ && cp eval.h5 content/ && cp train.h5 evalrows/
# Rank 1 runs in folder $1, the others here: the same relative paths.
cat >as_rank1.sh <<'SH'
#!/bin/sh
dir=$1
shift
[ "$OMPI_COMM_WORLD_RANK" = 1 ] && cd "$dir"
exec "$@"
SH
chmod +x as_rank1.sh
for dir in rows content evalrows; do
	expect_status 2 timeout 60 "$MPIRUN" --oversubscribe -np 2 ./as_rank1.sh "$dir" "$MTRAIN" \
		"${SMALL[@]}" --steps 6 --ckpt-dir "ck-$dir"
	[ "$(grep -c '^mtrain: error' last.err)" = 1 ] || { cat last.err; fail "$dir: want one line"; }
	grep -q "^mtrain: error: rank 1 on .*: --\(eval-\)\?data \(train\|eval\).h5 is not rank 0's file" \
		last.err || { cat last.err; fail "$dir: the line does not name rank 1 and the file"; }
	[ ! -e "ck-$dir" ] || fail "$dir: output written"
done
# The same files everywhere still run.
"$MPIRUN" --oversubscribe -np 2 ./as_rank1.sh . "$MTRAIN" "${SMALL[@]}" --steps 6 --ckpt-dir ok >/dev/null
pass "a rank whose data differs from rank 0's stops the job at start-up, named"
