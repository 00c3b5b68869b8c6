# mtrain import onto a full disk, from an image folder and from IDX files:
# one line naming the output file and the disk's reason, exit 2 (the
# disk, like any output path, is the user's to give), nothing left beside
# it (no temporary file), and an older file of that name intact. Both
# where the rows do not fit (HDF5 fails in a write) and where only the
# file's last bytes do not (it fails at close). A small tmpfs (small_disk).
. "$(dirname "$0")/../mpi/lib.sh"
small_disk small 256k
# 2 x 8 pictures of 16x16: 4 KiB of rows as they are, 256 KiB at 128x128.
png_folder img 8 16 a b
# IDX files of 16 pictures, 4 KiB and 256 KiB, not all zeros (a file of
# zeros may be written with holes that take no room).
python3 - <<'PY' || fail "making the IDX files"
import struct
for name, side in (("small", 16), ("big", 128)):
    n = 16
    pixels = bytes(i % 251 for i in range(n * side * side))
    open(name + "-images.idx", "wb").write(struct.pack(">IIII", 0x803, n, side, side) + pixels)
    open(name + "-labels.idx", "wb").write(struct.pack(">II", 0x801, n) + bytes([0, 1] * (n // 2)))
PY
"$MTRAIN" import --image-dir img --out small/img.h5 >/dev/null || fail "import of img/ (4 KiB)"
"$MTRAIN" import --images small-images.idx --labels small-labels.idx --out small/idx.h5 >/dev/null ||
	fail "import of the small IDX files"
cp small/img.h5 img-before.h5
cp small/idx.h5 idx-before.h5

# full_case PATTERN FILE ARGS...: import ARGS to small/FILE fails with one
# line holding PATTERN; small/ holds what it held, the older FILE unchanged.
full_case() {
	local pattern=$1 file=$2 before
	shift 2
	before=$(ls -A small | paste -sd' ' -)
	expect_error "$pattern" "$MTRAIN" import "$@" --out "small/$file"
	[ "$(ls -A small | paste -sd' ' -)" = "$before" ] ||
		fail "import $* onto a full disk left $(ls -A small | paste -sd' ' -) (had $before)"
	cmp -s small/"$file" "${file%.h5}-before.h5" || fail "import $*: the older small/$file changed"
}
# The rows do not fit.
full_case "small/img.h5: cannot write data file: No space left on device" img.h5 \
	--image-dir img --size 128,128
full_case "small/idx.h5: cannot write data file: No space left on device" idx.h5 \
	--images big-images.idx --labels big-labels.idx
# Room for the file to be created but not for all of it: HDF5 fails at close.
dd if=/dev/zero of=small/filler bs=4k 2>/dev/null || true
truncate -s -4k small/filler
full_case "small/img.h5: cannot write data file: No space left on device" img.h5 --image-dir img
full_case "small/idx.h5: cannot write data file: No space left on device" idx.h5 \
	--images small-images.idx --labels small-labels.idx
pass "import onto a full disk: one line naming the file and the reason, exit 2, nothing left"
