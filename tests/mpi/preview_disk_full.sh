# mtrain preview onto a full disk: one line naming the picture and the
# disk's reason, exit 2, and an older picture of that name intact (the
# grid is written under a temporary name, then renamed); nothing else is
# left. A small tmpfs (small_disk).
. "$(dirname "$0")/lib.sh"
small_disk small 256k
# 64 rows of 16x16x3 floats: a grid of 135x135 RGB pixels that hardly
# compresses (about 55 KiB).
"$MKDATA" synth rows.h5 64 768 2 1
PREVIEW=("$MTRAIN" preview --data rows.h5 --input-shape 16,16,3)
"${PREVIEW[@]}" --rows 4 --out small/grid.png >/dev/null || fail "preview of 4 rows"
cp small/grid.png before.png
# Room for the file to be created, not for its bytes.
dd if=/dev/zero of=small/filler bs=4k 2>/dev/null || true
truncate -s -8k small/filler
expect_error "small/grid.png: .*No space left on device" "${PREVIEW[@]}" --rows 64 --out small/grid.png
cmp -s before.png small/grid.png || fail "the older small/grid.png was overwritten"
[ "$(ls -A small | paste -sd' ' -)" = "filler grid.png" ] || fail "left in small/: $(ls -A small)"
# With room, the same command writes it (the test's sizes are right).
rm small/filler
"${PREVIEW[@]}" --rows 64 --out small/grid.png >/dev/null || fail "preview of 64 rows with room"
[ "$(stat -c %s small/grid.png)" -gt 16384 ] || fail "the 64-row grid is $(stat -c %s small/grid.png) bytes"
pass "preview onto a full disk: one line, exit 2, the older picture intact"
