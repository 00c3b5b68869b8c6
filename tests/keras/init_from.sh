# --init-from: Keras builds and trains a small CNN for one epoch and saves
# it (.weights.h5 and .keras); mtrain started from either evaluates, before
# its first step, to Keras' own accuracy and loss on the test set (within 5
# images in 10,000), then fine-tunes on 2 ranks. --init-skip leaves a new
# 5-class head fresh while the rest is Keras' bitwise; an mtrain checkpoint
# and a safetensors export start a run as mtrain eval scores them; a
# resumed run ignores --init-from and says so. A missing variable, a wrong
# shape, a file of none of the four kinds: one line each, exit 2, nothing
# written.
. "$(dirname "$0")/lib.sh"
need_python h5py numpy
import_fmnist
"$KPY" - train.h5 test.h5 >keras.txt <<'PY' || fail "Keras could not train its CNN"
import sys
import h5py, keras, numpy as np
from keras import layers as L
keras.utils.set_random_seed(1)
def load(path):
    with h5py.File(path, "r") as f:
        return (f["x"][()].astype(np.float32).reshape(-1, 28, 28, 1) * np.float32(1 / 255),
                f["y"][()].astype(np.int64))
(x, y), (xt, yt) = load(sys.argv[1]), load(sys.argv[2])
# As a Keras user writes it: Dense(64, activation="relu") is mtrain's
# "dense:64,relu"; the layers with variables are named alike.
m = keras.Sequential([keras.Input((28, 28, 1)), L.Conv2D(16, 3, padding="same"),
    L.BatchNormalization(), L.Activation("relu"), L.MaxPooling2D(2), L.Flatten(),
    L.Dense(64, activation="relu"), L.Dense(10, activation="softmax")])
m.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
m.fit(x, y, batch_size=64, epochs=1, verbose=0)
loss, acc = m.evaluate(xt, yt, batch_size=1000, verbose=0)
m.save_weights("k.weights.h5")
m.save("k.keras")
m.save("legacy.h5")  # Keras 2's format, which Keras 3 still writes
print(f"{loss:.6f} {acc:.6f}")
PY
read -r kloss kacc <keras.txt
model=conv2d:16:3,batchnorm,relu,maxpool2d:2,flatten,dense:64,relu,dense
RUN=(--model $model --input-shape 28,28,1 --data train.h5 --eval-data test.h5 --device cpu --batch 64)

for f in k.weights.h5 k.keras; do
	ranks 2 "${RUN[@]}" --init-from $f --steps 30 --ckpt-dir ck-$f --metrics $f.jsonl >$f.out ||
		fail "--init-from $f: the run failed"
	grep -q "^init-from $f (.*): 10 variables from it, 0 left fresh" $f.out ||
		{ cat $f.out; fail "--init-from $f: no line saying what it took"; }
	read -r loss acc < <(step0 $f.jsonl)
	[ -n "$acc" ] || fail "--init-from $f: no evaluation at step 0"
	echo "--init-from $f: mtrain at step 0 loss $loss acc $acc; Keras loss $kloss acc $kacc"
	awk -v a="$acc" -v b="$kacc" -v l="$loss" -v k="$kloss" \
		'BEGIN { d = a - b; e = l - k; exit !(d <= 5e-4 + 1e-9 && -d <= 5e-4 + 1e-9 && e < 5e-4 && -e < 5e-4) }' ||
		fail "--init-from $f: accuracy $acc / loss $loss, Keras' $kacc / $kloss"
	# then it fine-tunes: 30 steps on 2 ranks, a checkpoint at the end
	[ -f ck-$f/ckpt-00000030.h5 ] || fail "--init-from $f: no checkpoint after fine-tuning"
done

# A new head: 5 classes where Keras had 10. Without --init-skip, one line
# naming the variable and both shapes; with it, the head is fresh and the
# rest is Keras' (a step of lr 1e-30 leaves the weights as they started).
"$PY" - train.h5 five.h5 <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    keep = f["y"][()] < 5
    x, y = f["x"][()][keep][:5000], f["y"][()][keep][:5000]
with h5py.File(sys.argv[2], "w") as f:
    f["x"] = x
    f["y"] = y
    f["y"].attrs["num_classes"] = 5
PY
FIVE=(--model $model --input-shape 28,28,1 --data five.h5 --device cpu --batch 64)
expect_job_error "--init-from k.keras: dense_1/kernel \(dense_1/vars/0\) is \[64,10\] there and \[64,5\] in this model; --init-skip can leave it fresh" \
	ranks 2 "${FIVE[@]}" --init-from k.keras --steps 1 --ckpt-dir bad
[ ! -e bad ] || fail "a run stopped by --init-from wrote its --ckpt-dir"
ranks 2 "${FIVE[@]}" --init-from k.keras --init-skip 'dense_1/.*' --steps 1 --lr 1e-30 --ckpt-dir five >five.out ||
	fail "--init-skip: the run failed"
grep -q "8 variables from it, 2 left fresh (--init-skip)" five.out || { cat five.out; fail "--init-skip: not 8 taken, 2 fresh"; }
! grep -q "does not have" five.out || { cat five.out; fail "--init-skip: skipped variables called extra"; }
"$PY" - five/ckpt-00000001.h5 k.weights.h5 <<'PY' || fail "--init-skip: the weights are not Keras' and a fresh head"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as c, h5py.File(sys.argv[2], "r") as k:
    ck = lambda n: c[n.replace("/", ".")][()]
    for name, key in [("conv2d/kernel", "conv2d/vars/0"), ("dense/kernel", "dense/vars/0"),
                      ("batch_normalization/gamma", "batch_normalization/vars/0"),
                      ("conv2d/kernel/ExponentialMovingAverage", "conv2d/vars/0")]:
        assert ck(name).tobytes() == k["layers/" + key][()].tobytes(), name
    head = ck("dense_1/kernel")
    assert head.shape == (64, 5) and np.abs(head).max() > 0, head.shape
PY

# A variable the file lacks: one line listing them, exit 2.
expect_job_error "--init-from k.weights.h5 \(a Keras .weights.h5\) lacks 2 of this model's variables: dense_2/kernel \(dense_2/vars/0\), dense_2/bias \(dense_2/vars/1\); --init-skip can leave them fresh" \
	ranks 2 "${RUN[@]}" --model $model:10,relu,dense --init-from k.weights.h5 --steps 1 --ckpt-dir bad
[ ! -e bad ] || fail "a run stopped by --init-from wrote its --ckpt-dir"
# Names the model does not have: one warning line.
ranks 1 "${RUN[@]}" --model conv2d:16:3,batchnorm,relu,maxpool2d:2,flatten,dense \
	--init-from k.keras --init-skip 'dense/.*' --steps 1 --ckpt-dir extra >extra.out 2>extra.err ||
	fail "extra names: the run failed"
grep -q "^mtrain: warning: --init-from k.keras holds 2 variables this model does not have: dense_1/vars/0, dense_1/vars/1$" extra.err ||
	{ cat extra.err; fail "extra names: no one warning line listing them"; }
# Files of none of the four kinds (Keras 2's .h5 among them), damaged
# ones (a .keras whose member fails its CRC-32, as Keras' zipfile finds),
# a FIFO (refused, not waited on), values that are not weights.
echo "not weights" >notes.txt
head -c 2000 k.keras >cut.keras
head -c 3000 k.weights.h5 >cut.weights.h5
"$PY" - k.keras crc.keras <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
info = z.getinfo("model.weights.h5")
data = bytearray(open(sys.argv[1], "rb").read())
at = info.header_offset + 30 + len(info.filename) + len(info.extra) + info.file_size // 2
data[at:at + 64] = bytes(64)  # zeros in the middle of the weights
open(sys.argv[2], "wb").write(data)
PY
mkfifo fifo.keras
"$PY" - k.weights.h5 nan.weights.h5 int.weights.h5 <<'PY'
import sys, shutil, h5py, numpy as np
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "a") as f:
    b = f["layers/dense/vars/1"]
    b[5] = np.nan
shutil.copy(sys.argv[1], sys.argv[3])
with h5py.File(sys.argv[3], "a") as f:
    v = f["layers/dense/vars/1"][()]
    del f["layers/dense/vars/1"]
    f["layers/dense/vars/1"] = v.astype(np.int32)
PY
for bad in "notes.txt: not an mtrain checkpoint, safetensors, .keras or Keras .weights.h5 file" \
	"cut.keras: not a readable zip" "cut.weights.h5: begins as HDF5 but HDF5 cannot open it" \
	"missing.keras: cannot open: No such file" "train.h5: not an mtrain checkpoint" \
	"legacy.h5: a legacy Keras HDF5 file \(Keras 2, tf.keras\): load it in Keras 3 and save it as .keras or .weights.h5" \
	"crc.keras: its model.weights.h5 fails its CRC-32 \(damaged\)" "fifo.keras: cannot open: not a regular file" \
	"int.weights.h5: layers/dense/vars/1 is not floating point"; do
	expect_job_error "$bad" ranks 2 "${RUN[@]}" --init-from "${bad%%:*}" --steps 1 --ckpt-dir bad
	[ ! -e bad ] || fail "--init-from ${bad%%:*}: wrote its --ckpt-dir"
done
# A weight that is NaN: refused by name, not trained on.
expect_job_error "--init-from nan.weights.h5: dense/bias \(dense/vars/1\) holds NaN \(value 6 of 64\)" \
	ranks 2 "${RUN[@]}" --init-from nan.weights.h5 --steps 1 --ckpt-dir bad
[ ! -e bad ] || fail "a run stopped by --init-from wrote its --ckpt-dir"
# An --init-skip that matches nothing (a typo) is said.
ranks 1 "${RUN[@]}" --init-from k.keras --init-skip 'dens/.*' --steps 1 --ckpt-dir typo >typo.out 2>typo.err ||
	fail "--init-skip matching nothing: the run failed"
grep -q "^mtrain: warning: --init-skip 'dens/.\*' matches none of this model's variables$" typo.err ||
	{ cat typo.err; fail "--init-skip matching nothing: no warning"; }
expect_error "--init-skip: names variables --init-from leaves fresh; give --init-from FILE too" \
	"$MTRAIN" "${RUN[@]}" --init-skip 'dense/.*' --steps 1 --ckpt-dir bad
expect_error "--init-skip: '\(' is not a regular expression" \
	"$MTRAIN" "${RUN[@]}" --init-from k.keras --init-skip '(' --steps 1 --ckpt-dir bad

# mtrain's own files: a checkpoint (its weights, not its shadows or slots)
# and a safetensors export start a run as mtrain eval scores them.
ck=ck-k.keras/ckpt-00000030.h5
"$MTRAIN" export $ck --out raw.safetensors >/dev/null
ranks 2 eval --ckpt $ck --weights raw --device cpu >eval.txt
read -r eloss eacc < <(sed -n 's/.* raw loss \([0-9.]*\) acc \([0-9.]*\) .*/\1 \2/p' eval.txt)
{ cat raw.safetensors; printf 'trailing'; } >trail.safetensors
expect_job_error "trail.safetensors: 8 bytes after the last tensor's data" \
	ranks 2 "${RUN[@]}" --init-from trail.safetensors --steps 1 --ckpt-dir bad
for f in $ck raw.safetensors; do
	ranks 2 "${RUN[@]}" --init-from $f --steps 1 --ckpt-dir ck-own-${f##*/} --metrics own.jsonl \
		>own.out 2>own.err || fail "--init-from $f: the run failed"
	! grep -q "does not have" own.err || { cat own.err; fail "--init-from $f: names called extra"; }
	read -r loss acc < <(step0 own.jsonl)
	rm own.jsonl
	[ "$(printf '%.4f %.4f' "$loss" "$acc")" = "$eloss $eacc" ] ||
		fail "--init-from $f: step 0 loss $loss acc $acc, mtrain eval $eloss $eacc"
done

# A run that resumes its own checkpoint keeps it, and says so.
ranks 2 "${RUN[@]}" --init-from k.keras --steps 40 --ckpt-dir ck-k.keras --metrics resumed.jsonl >resumed.out ||
	fail "resume with --init-from failed"
grep -q "^init-from k.keras: not used: the run resumed from its checkpoint" resumed.out ||
	{ cat resumed.out; fail "a resumed run did not say it ignored --init-from"; }
[ -z "$(step0 resumed.jsonl)" ] || fail "a resumed run evaluated the --init-from weights"
pass "--init-from: Keras' accuracy $kacc at step 0 from .weights.h5 and .keras, fine-tuned on 2 ranks; --init-skip; bad files one line"
