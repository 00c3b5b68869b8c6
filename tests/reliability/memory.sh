# Bounded memory: each rank streams its rows from the file, so a data set
# larger than the memory the whole job may use trains to the end (of its
# 1200 steps, which read more rows than the job's memory holds). A memory
# cgroup (v2 or v1, whichever the machine has) of 1.5 GiB holds the job (2
# ranks, mpirun included); the data set is 6 GiB of [N, 32, 32, 3] uint8,
# its page cache dropped first so that reading it is charged to the job. The
# cgroup must have reached its limit (the set did not fit), the run must end
# at its last step, and each rank's peak RSS must be within 10% of its peak
# with a 0.5 GiB set. Skips (skip_or_fail) where no cgroup can be made or the
# disk lacks room.
. "$(dirname "$0")/../mpi/lib.sh"
MKROWS=$MTRAIN_BUILD/tests/mkrows
LIMIT=$((1536 * 1024 * 1024))
SMALL_ROWS=170000 BIG_ROWS=2000000 # 0.52 GB and 6.1 GB of 3072-byte rows

[ "$(id -u)" = 0 ] || skip_or_fail "making a memory cgroup needs root"
avail=$(df --output=avail -k . | tail -n 1)
[ "$avail" -gt $((8 * 1024 * 1024)) ] || skip_or_fail "$(pwd) has under 8 GiB free for a 6 GiB data set"

# A child memory cgroup, v2 under the root, or v1 under this shell's own.
CG= VERSION=
if [ -f /sys/fs/cgroup/cgroup.subtree_control ] &&
	grep -qw memory /sys/fs/cgroup/cgroup.subtree_control; then
	CG=/sys/fs/cgroup/mtrain-memtest-$$ VERSION=2
elif v1=$(sed -n 's/^[0-9]*:memory:\(.*\)$/\1/p' /proc/self/cgroup) && [ -n "$v1" ] &&
	[ -d "/sys/fs/cgroup/memory$v1" ]; then
	CG=/sys/fs/cgroup/memory${v1%/}/mtrain-memtest-$$ VERSION=1
fi
[ -n "$CG" ] && mkdir "$CG" 2>/dev/null || skip_or_fail "no memory cgroup can be made here"
trap 'jobs -p | xargs -r kill -9 2>/dev/null; wait 2>/dev/null; rmdir "$CG" 2>/dev/null; rm -rf "$WORK"' EXIT
if [ $VERSION = 2 ]; then
	echo $LIMIT >"$CG/memory.max" && echo 0 >"$CG/memory.swap.max" 2>/dev/null || true
else
	echo $LIMIT >"$CG/memory.limit_in_bytes"
fi
# Times the cgroup's usage met its limit.
limit_hits() {
	if [ $VERSION = 2 ]; then
		sed -n 's/^max //p' "$CG/memory.events"
	else
		cat "$CG/memory.failcnt"
	fi
}

# run ROWS: a 2-rank job on a fresh ROWS-row set inside the cgroup, 1200
# steps of 512 rows (1.9 GB of rows read: more than the cgroup holds); each
# rank's peak RSS in kB in rss-ROWS.RANK. A small model: the reading is the
# point.
run() {
	local rows=$1 data=set-$1.h5
	"$MKROWS" big "$data" "$rows" 32 32 3 7 || fail "cannot write $data"
	sync "$data" # written out, so that dropping its page cache drops it all
	dd if="$data" iflag=nocache count=0 status=none
	local hits0
	hits0=$(limit_hits)
	[ $VERSION = 2 ] || echo 0 >"$CG/memory.max_usage_in_bytes" # this run's peak
	bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$CG" \
		timeout 280 "$MPIRUN" --oversubscribe -np 2 \
		python3 -c 'import os, resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
with open("%s.%s" % (sys.argv[1], os.environ["OMPI_COMM_WORLD_RANK"]), "w") as f:
    f.write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "rss-$rows" "$MTRAIN" --device cpu --data "$data" --eval-data none --layers 8 \
		--batch 512 --steps 1200 --log-every 600 --ckpt-dir "ck-$rows" >"run-$rows.out" 2>&1 ||
		{ cat "run-$rows.out"; fail "$rows rows under a 1.5 GiB cgroup: the job failed"; }
	grep -q "^step 1200/1200" "run-$rows.out" || { cat "run-$rows.out"; fail "$rows rows: no step 1200"; }
	HITS=$(($(limit_hits) - hits0))
	echo "cgroup $CG: limit met $HITS times, peak usage $(cat "$CG/memory.max_usage_in_bytes" 2>/dev/null || cat "$CG/memory.peak" 2>/dev/null)"
	rm -f "$data"
}

run $BIG_ROWS
[ "$HITS" -gt 0 ] || fail "the 6 GiB run never met the cgroup's 1.5 GiB limit: the test proves nothing"
big_hits=$HITS
run $SMALL_ROWS
for r in 0 1; do
	small=$(cat rss-$SMALL_ROWS.$r) big=$(cat rss-$BIG_ROWS.$r)
	awk -v a="$small" -v b="$big" 'BEGIN { d = (b - a) / a; exit !(d < 0.10 && d > -0.10) }' ||
		fail "rank $r: peak RSS $big kB with 6 GiB of data, $small kB with 0.5 GiB: over 10% apart"
	echo "rank $r: peak RSS $small kB (0.5 GiB set), $big kB (6 GiB set)"
done
pass "6 GiB of data trained under a 1.5 GiB cgroup (v$VERSION, limit met $big_hits times); peak RSS per rank as with 0.5 GiB"
