# --init-from a .keras zip whose model.weights.h5 inflates to more than
# the reader should hold. Each case: one line naming the file and the
# member, exit 2. The member's declared size is checked against the memory
# budget before anything is inflated; what is inflated is held once (the
# reader's peak RSS at most the member's size and 25% more than a small
# file's read: it held about three copies, one its own and two of HDF5's
# opening it from memory); a member that claims more than it holds is
# called so; an address-space limit (ulimit -v) is a line, not a crash of
# the reader.
. "$(dirname "$0")/../mpi/lib.sh"
make_data
# keras_zip OUT MIB [DECLARED]: a .keras zip whose model.weights.h5 is MIB
# MiB of zeros (deflated: a thousandth of that in the zip), and whose
# central directory says it is DECLARED bytes when that is given.
keras_zip() {
	python3 - "$@" <<'PY' || fail "making $1"
import sys, zipfile
out, mib = sys.argv[1], int(sys.argv[2])
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
    z.writestr("config.json", "{}")
    z.writestr("metadata.json", "{}")
    with z.open("model.weights.h5", "w", force_zip64=True) as f:
        for _ in range(mib):
            f.write(bytes(1 << 20))
    if len(sys.argv) > 3:
        z.getinfo("model.weights.h5").file_size = int(sys.argv[3])
PY
}
# init_from FILE: a short run given --init-from FILE; its peak RSS (the
# largest of mtrain's and its reader child's, in kB) in FILE.rss.
init_from() {
	expect_status 2 python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$1.rss" "$MTRAIN" --device cpu --data train.h5 --eval-data none --layers 8 \
		--batch 14 --steps 1 --ckpt-dir ck --init-from "$1"
}
# one_line FILE PATTERN: last.err is one line, "mtrain: error: FILE: ..."
# holding PATTERN.
one_line() {
	[ "$(wc -l <last.err)" = 1 ] && grep -qE "^mtrain: error: $1: its model.weights.h5 $2" last.err ||
		{ cat last.err; fail "$1: want one line naming it and its member: '$2'"; }
}

# Inflated, and held once.
keras_zip small.keras 1
init_from small.keras
one_line small.keras "is not an HDF5 file"
keras_zip bomb.keras 256
init_from bomb.keras
one_line bomb.keras "is not an HDF5 file"
small=$(cat small.keras.rss) big=$(cat bomb.keras.rss)
[ "$big" -le $((small + 256 * 1024 * 5 / 4)) ] ||
	fail "a 256 MiB member: peak RSS $big kB, more than one copy over a 1 MiB member's $small kB"
echo "peak RSS: $small kB with a 1 MiB member, $big kB with a 256 MiB member"

# More than the budget (twice the node's available memory): refused before
# it is inflated.
avail=$(sed -n 's/^MemAvailable: *\([0-9]*\) kB$/\1/p' /proc/meminfo)
declared=$((2 * avail * 1024))
if [ "$declared" -lt $((1 << 40)) ]; then
	keras_zip huge.keras 1 $declared
	init_from huge.keras
	one_line huge.keras "needs about [0-9.]+ GiB per rank; this rank may use [0-9.]+ GiB"
else
	echo "more than 512 GiB available: the member over the budget is not tried"
fi

# A member that says it is 64 MiB and holds 1 MiB: named so, not "(No error)".
keras_zip short.keras 1 $((64 << 20))
init_from short.keras
one_line short.keras "ends after 1048576 of the 67108864 bytes"

# 4 GiB said, under a 3 GiB address space: one line, not the reader's
# "out of memory" and the parent's after it. (Where 4 GiB is over the
# budget, the budget's line.)
# (Not on the sanitizer build: AddressSanitizer reserves terabytes of
# shadow address space at start and cannot run under ulimit -v at all.)
if [ -z "${ASAN_OPTIONS:-}" ]; then
	keras_zip four.keras 1 $((4 << 30))
	(ulimit -v $((3 << 20)) && init_from four.keras)
	one_line four.keras "needs"
fi
pass ".keras members too large: one line each, refused before inflating, held once"
