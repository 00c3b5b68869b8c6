# A checkpoint that does not fit on the disk: every rank stops with exit
# status 1 (a system error, not bad input) after one line naming the file
# and the reason; nothing is left under its name or as a temporary file, and
# the checkpoint before it stays whole. Needs a small tmpfs (small_disk).
. "$(dirname "$0")/lib.sh"
small_disk small 512k
make_data
ranks 2 "${SMALL[@]}" --steps 2 --ckpt-dir small/ck >/dev/null
cp small/ck/ckpt-00000002.h5 before.h5
# Fill what is left, then ask for the next checkpoint.
dd if=/dev/zero of=small/filler bs=4k 2>/dev/null || true
expect_status 1 ranks 2 "${SMALL[@]}" --steps 4 --ckpt-dir small/ck
[ "$(grep -c '^mtrain: error' last.err)" = 1 ] || { cat last.err; fail "want one error line"; }
grep -q "^mtrain: error.*: cannot write checkpoint small/ck/ckpt-00000004.h5: No space left on device" \
	last.err || { cat last.err; fail "the line does not name the file and the reason"; }
grep -q "Segmentation fault\|Signal:" last.err last.out && fail "a rank crashed on the way out"
[ "$(ls -A small/ck)" = "ckpt-00000002.h5" ] || { ls -A small/ck; fail "a partial or temporary file was left"; }
same_ckpt before.h5 small/ck/ckpt-00000002.h5
# Room for the file to be created but not written: HDF5 fails at close.
truncate -s -16k small/filler
expect_status 1 ranks 2 "${SMALL[@]}" --steps 4 --ckpt-dir small/ck
grep -q "cannot write checkpoint small/ck/ckpt-00000004.h5: No space left on device" last.err ||
	{ cat last.err; fail "no line when the close fails"; }
grep -q "Segmentation fault\|Signal:" last.err last.out && fail "a rank crashed after a failed close"
[ "$(ls -A small/ck)" = "ckpt-00000002.h5" ] || { ls -A small/ck; fail "a partial file was left"; }
same_ckpt before.h5 small/ck/ckpt-00000002.h5
# A variable larger than HDF5's chunk cache is written at once, so the
# disk fails inside the write itself: the same line, nothing left.
rm -rf small/*
"$MKDATA" synth wide.h5 200 784 3 1
expect_status 1 ranks 2 --device cpu --data wide.h5 --eval-data none --layers 512 --batch 14 \
	--steps 2 --ckpt-dir small/wide
grep -q "cannot write checkpoint small/wide/ckpt-00000002.h5: No space left on device" last.err ||
	{ cat last.err; fail "no line when a large write fails"; }
[ -z "$(ls -A small/wide)" ] || { ls -A small/wide; fail "a partial file was left by a large write"; }
pass "a full disk: one line, exit 1, nothing half-written, the last checkpoint whole"
