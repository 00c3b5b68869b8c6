# mtrain import --image-dir: the first 300 Fashion-MNIST training images,
# written by PIL as PNG class folders named by their classes (so the sorted
# folder order is not the label order), import to the same x bytes and y
# as the IDX import of those rows, in the importer's order (class by
# class, file names sorted), with class ids in sorted folder-name order and
# the names stored; pixel-doubled copies with --size 28,28 give the same
# bytes again; gray and colour JPEGs and PNGs mixed give [N,H,W,3] as PIL
# decodes them, gray replicated. Bad input (a broken PNG or JPEG, a file
# that is no image, an empty class, a file that cannot be opened, a folder
# without class folders, odd sizes without --size): one line, exit 2, and
# no file left.
. "$(dirname "$0")/../mpi/lib.sh"
need_python PIL h5py numpy
src=/usr/share/datasets/fashion-mnist
[ -r $src/train-images-idx3-ubyte.gz ] ||
	skip_or_fail "no Fashion-MNIST in $src (Debian's dataset-fashion-mnist)"
"$MTRAIN" import --images $src/train-images-idx3-ubyte.gz \
	--labels $src/train-labels-idx1-ubyte.gz --out idx.h5 >/dev/null

# The fixtures: png/ (300 rows), big/ (the same, class Bag's images at
# 56x56, every pixel doubled), mixed/ (gray and RGB, PNG and JPEG), and
# the bad folders, each holding one fault.
"$PY" - $src <<'PY' || fail "making the image folders"
import gzip, os, sys
import numpy as np
from PIL import Image
src = sys.argv[1]
names = ["T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
         "Bag", "Ankle boot"]
x = np.frombuffer(gzip.open(src + "/train-images-idx3-ubyte.gz").read()[16:],
                  np.uint8).reshape(-1, 28, 28)[:300]
y = np.frombuffer(gzip.open(src + "/train-labels-idx1-ubyte.gz").read()[8:], np.uint8)[:300]
for i in range(300):
    for top in ("png", "big"):
        os.makedirs(f"{top}/{names[y[i]]}", exist_ok=True)
    Image.fromarray(x[i]).save(f"png/{names[y[i]]}/{i:03d}.png")
    img = x[i].repeat(2, 0).repeat(2, 1) if y[i] == 8 else x[i]
    Image.fromarray(img).save(f"big/{names[y[i]]}/{i:03d}.png")
rgb = lambda i: np.stack([x[i], 255 - x[i], x[i] // 2], axis=2)
os.makedirs("mixed/a_gray_jpeg"); os.makedirs("mixed/b_rgb_png"); os.makedirs("mixed/c_rgb_jpeg")
for i in range(4):
    Image.fromarray(x[i]).save(f"mixed/a_gray_jpeg/{i}.jpg", quality=90)
    Image.fromarray(rgb(i)).save(f"mixed/b_rgb_png/{i}.PNG")
    Image.fromarray(rgb(i)).save(f"mixed/c_rgb_jpeg/{i}.jpeg", quality=85)
    Image.fromarray(x[i]).convert("LA").save(f"mixed/b_rgb_png/{i}_alpha.png")
open("mixed/readme.txt", "w").write("not a class folder: skipped")
def bad(name, cls="one"):
    os.makedirs(f"{name}/{cls}")
    for i in range(3):
        Image.fromarray(x[i]).save(f"{name}/{cls}/{i}.png")
    os.makedirs(f"{name}/zz")
    Image.fromarray(x[3]).save(f"{name}/zz/ok.jpg")
    return f"{name}/{cls}"
png = open("png/Bag/" + sorted(os.listdir("png/Bag"))[0], "rb").read()
open(bad("trunc_png") + "/3.png", "wb").write(png[: len(png) - 30])
Image.fromarray(x[5]).save("j.jpg")
jpg = open("j.jpg", "rb").read()
open(bad("trunc_jpg") + "/3.jpg", "wb").write(jpg[: len(jpg) // 2])
open(bad("junk") + "/3.png", "wb").write(b"GIF89a and then some more bytes")
os.makedirs(bad("empty", "a") + "/../b_empty")
os.symlink("missing.png", bad("dangling") + "/3.png")
os.makedirs("noclass"); open("noclass/1.png", "wb").write(png)
PY

"$MTRAIN" import --image-dir png --out png.h5 >import.out || fail "import of png/"
grep -q "import: 300 images \[28,28,1\] in 10 classes .*rows/s" import.out ||
	{ cat import.out; fail "no summary line with rows/s"; }
"$MTRAIN" import --image-dir big --out big.h5 --size 28,28 >/dev/null || fail "import --size"
"$MTRAIN" import --image-dir mixed --out mixed.h5 >mixed.out || fail "import of mixed/"
grep -q "skipped 1 entries" mixed.out || { cat mixed.out; fail "readme.txt not counted"; }

"$PY" - <<'PY' || fail "imported bytes"
import glob, h5py, numpy as np
from PIL import Image
names = ["T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
         "Bag", "Ankle boot"]
with h5py.File("idx.h5", "r") as f:
    x, y = f["x"][:300], f["y"][:300]
# Class ids in sorted folder-name order; rows class by class, each class's
# files (named by row) in order.
folders = sorted(names)
new_id = np.array([folders.index(n) for n in names])
order = np.concatenate([np.flatnonzero(new_id[y] == k) for k in range(10)])
for path in ("png.h5", "big.h5"):
    with h5py.File(path, "r") as f:
        assert f["x"].dtype == np.uint8 and f["x"].shape == (300, 28, 28, 1), path
        assert f["y"].dtype == np.int32, path
        assert np.array_equal(f["x"][()], x[order]), path + ": x differs"
        assert np.array_equal(f["y"][()], new_id[y[order]]), path + ": y differs"
        assert f["y"].attrs["num_classes"] == 10, path
        got = [s.decode() for s in f["class_names"][()]]
        assert got == folders, (path, got)
want = []
for k, cls in enumerate(sorted(glob.glob("mixed/*/"))):
    for p in sorted(glob.glob(cls + "*")):
        a = np.asarray(Image.open(p).convert("RGB"))
        want.append((a, k))
with h5py.File("mixed.h5", "r") as f:
    assert f["x"].shape == (16, 28, 28, 3), f["x"].shape
    assert np.array_equal(f["x"][()], np.stack([a for a, _ in want])), "mixed: x differs"
    assert list(f["y"][()]) == [k for _, k in want], list(f["y"][()])
    assert [s.decode() for s in f["class_names"][()]] == ["a_gray_jpeg", "b_rgb_png",
                                                       "c_rgb_jpeg"]
PY
pass "PNG folders import to the IDX import's bytes; --size; gray and RGB, PNG and JPEG"

# The imported file trains like any other.
timeout 120 "$MTRAIN" --device cpu --data png.h5 --eval-data png.h5 --layers 16 \
	--batch 50 --steps 3 >train.out 2>&1 || { cat train.out; fail "training on png.h5"; }

# bad_case PATTERN DIR [ARGS]: one error line holding PATTERN, exit 2, no file.
bad_case() {
	local pattern=$1 dir=$2
	shift 2
	expect_error "$pattern" "$MTRAIN" import --image-dir "$dir" --out out/bad.h5 "$@"
	[ -z "$(ls -A out)" ] || fail "$dir left $(ls out)"
}
mkdir out
bad_case "trunc_png/one/3.png: broken PNG image" trunc_png
bad_case "trunc_jpg/one/3.jpg: broken JPEG image" trunc_jpg
bad_case "junk/one/3.png: not a PNG or JPEG image" junk
bad_case "empty/b_empty: empty class folder" empty
bad_case "dangling/one/3.png: cannot open: No such file" dangling
bad_case "noclass: no class folders" noclass
bad_case "nowhere: cannot open image folder" nowhere
bad_case "big/Bag/[0-9]+.png: 56x56 pixels, but big/.* is 28x28 .*--size H,W" big
bad_case "--size: '28' is not H,W" big --size 28
if [ "$(id -u)" != 0 ]; then # root reads any file
	chmod 000 png/Coat/*.png
	bad_case "png/Coat/[0-9]+.png: cannot open: Permission denied" png
fi
pass "bad image folders: one line each, exit 2, no file left"
