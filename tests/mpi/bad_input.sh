# Every bad input (flags, config, data, checkpoint) gets one clear line naming
# what is wrong and where, exit status 2, and nothing is written: no
# checkpoint folder, no metrics file.
. "$(dirname "$0")/lib.sh"
make_data
for kind in nan neglabel x1d x3d int16 ylen noy ncarray wide vast xgroup xlink xcompound; do
	"$MKDATA" bad bad-$kind.h5 $kind
done
"$MKDATA" synth wide.h5 30 13 3 1
echo "not hdf5" >text.h5
printf 'lr = 0.01\nlerning_rate = 3\n' >typo.conf
printf 'batch 14\n' >noeq.conf
printf 'lr = 0.01\nbatch = 14\nlr = 0.5\n' >twice.conf
printf 'lr = 0.01\nmodel =\n' >nomodel.conf
printf 'lr = 0.01\n\0batch = 3\n' >nul.conf
head -c 1100000 /dev/zero | tr '\0' '#' >huge.conf
# A checkpoint of another model, and a corrupt one.
"$MTRAIN" "${SMALL[@]}" --layers 16,4 --steps 2 --ckpt-dir other >/dev/null
cp other/ckpt-00000002.h5 corrupt.h5
truncate -s 3000 corrupt.h5

# bad WHAT-THE-LINE-MUST-SAY ARGS...: one process, exit 2, one line, no output files.
bad() {
	local want=$1
	shift
	rm -rf out.ck out.jsonl
	expect_status 2 "$MTRAIN" --ckpt-dir out.ck --metrics out.jsonl "$@"
	[ "$(wc -l <last.err)" = 1 ] || { cat last.err; fail "not one line: $*"; }
	grep -q "^mtrain: error: .*$want" last.err || { cat last.err; fail "'$want' not said for: $*"; }
	[ ! -e out.ck ] && [ ! -e out.jsonl ] || fail "output written for: $*"
}
bad "unknown flag '--lerning-rate' (did you mean '--lr'?)" "${SMALL[@]}" --lerning-rate 3
bad "unknown flag '--optimiser' (did you mean '--optimizer'?)" "${SMALL[@]}" --optimiser sgd
# Other trainers' spellings: DeepSpeed's, Hugging Face's underscores.
bad "unknown flag '--zero-stage' (did you mean '--zero'?)" "${SMALL[@]}" --zero-stage 1
bad "unknown flag '--weight_decay' (did you mean '--weight-decay'?)" "${SMALL[@]}" --weight_decay 0.1
bad "unknown flag '--lr-scheduler' (did you mean '--schedule'?)" "${SMALL[@]}" --lr-scheduler cosine
bad "typo.conf:2: unknown config key 'lerning-rate'" "${SMALL[@]}" --config typo.conf
bad "noeq.conf:1: expected 'key = value'" "${SMALL[@]}" --config noeq.conf
bad "missing.conf: cannot open" "${SMALL[@]}" --config missing.conf
bad "twice.conf:3: 'lr' is already set at line 1" "${SMALL[@]}" --config twice.conf
bad "nul.conf: holds a NUL byte at offset 10" "${SMALL[@]}" --config nul.conf
bad "huge.conf: larger than 1048576 bytes" "${SMALL[@]}" --config huge.conf
bad "--weight-decay: -0.5 is out of range (0..10)" "${SMALL[@]}" --weight-decay -0.5
bad "--batch: 0 is out of range" "${SMALL[@]}" --batch 0
bad "--lr: 'fast' is not a number" "${SMALL[@]}" --lr fast
bad "--ema-decay: 1.5 is out of range" "${SMALL[@]}" --ema-decay 1.5
bad "--activation: 'swish' is not one of relu|gelu|tanh" "${SMALL[@]}" --activation swish
bad "--layers: '16,,x' is not a comma-separated list" "${SMALL[@]}" --layers 16,,x
bad "--layers: '16,' ends in a comma" "${SMALL[@]}" --layers 16,
# An unknown layer gets the nearest kind, as an unknown flag the nearest option.
bad "--model: unknown layer 'conv2' at character 1; did you mean 'conv2d'? (layers: dense, conv2d, " \
	"${SMALL[@]}" --model conv2:8:3,relu,flatten,dense
# An empty model is no model (it trained the MLP of --layers without a word).
bad "--model: must not be empty" "${SMALL[@]}" --model ''
bad "nomodel.conf:2: model: must not be empty" "${SMALL[@]}" --config nomodel.conf
bad "--steps: missing value" "${SMALL[@]}" --steps
bad "unexpected argument 'oops'" "${SMALL[@]}" oops
bad "nofile.h5: cannot open data file" "${SMALL[@]}" --data nofile.h5
bad "text.h5: not an HDF5 file" "${SMALL[@]}" --data text.h5
bad "bad-nan.h5: x\[5, 2\] is NaN" "${SMALL[@]}" --data bad-nan.h5
bad "bad-neglabel.h5: y\[3\] = -1 is negative" "${SMALL[@]}" --data bad-neglabel.h5 --batch 4
bad "bad-x1d.h5: dataset 'x' has 1 dimensions" "${SMALL[@]}" --data bad-x1d.h5
bad "bad-x3d.h5: dataset 'x' has 3 dimensions; expected 2 or 4 (\[N, D\] or \[N, H, W, C\])" \
	"${SMALL[@]}" --data bad-x3d.h5
# Images [N, H, W, C]: --input-shape may only repeat their shape, and the
# eval rows must be shaped as the training rows.
"$MKDATA" reshape train.h5 img-train.h5 2 2 3
"$MKDATA" reshape eval.h5 img-eval.h5 2 2 3
IMG=("${SMALL[@]}" --data img-train.h5 --eval-data img-eval.h5)
bad "--input-shape 3,2,2 does not match the images of img-train.h5, 2,2,3" "${IMG[@]}" --input-shape 3,2,2
bad "eval.h5: input rows are \[12\] but the training set img-train.h5's are \[2,2,3\]" \
	"${IMG[@]}" --eval-data eval.h5
# Repeating their shape is fine (tests/mpi/model.sh trains on images).
expect_status 0 "$MTRAIN" "${IMG[@]}" --input-shape 2,2,3 --steps 2 --ckpt-dir img.ck
# A conv2d or a pool on flat rows (each would be a 1x1 image) wants --input-shape.
bad "--model: layer 1 (conv2d) needs an image, but the data's rows are flat \[12\]: give their shape with --input-shape H,W,C (e.g. 2,2,3)" \
	"${SMALL[@]}" --model conv2d:4:2,relu,flatten,dense
bad "--model: layer 3 (maxpool2d) needs an image, but the data's rows are flat \[12\]" \
	"${SMALL[@]}" --model dense:8,relu,maxpool2d:2,flatten,dense
expect_status 0 "$MTRAIN" "${SMALL[@]}" --input-shape 2,2,3 --model conv2d:4:2,relu,maxpool2d:2,flatten,dense \
	--steps 2 --ckpt-dir flat-shaped.ck
expect_status 0 "$MTRAIN" "${IMG[@]}" --model conv2d:4:2,relu,globalavgpool,dense --steps 2 --ckpt-dir img2.ck
bad "bad-int16.h5: dataset 'x' has integers of 2 bytes; expected float32 or uint8" "${SMALL[@]}" --data bad-int16.h5
bad "bad-ylen.h5: 'y' has 7 rows but 'x' has 8" "${SMALL[@]}" --data bad-ylen.h5
bad "bad-noy.h5: no dataset 'y'" "${SMALL[@]}" --data bad-noy.h5
# A class count that is an array overflowed the stack; 2^31 features wrapped an int.
bad "bad-ncarray.h5: attribute y.num_classes is not one integer" "${SMALL[@]}" --data bad-ncarray.h5
bad "bad-wide.h5: dataset 'x' is .2, 2147483650.; mtrain takes at most" "${SMALL[@]}" --data bad-wide.h5
# fuzz_dataset's finding: a 'y' that stores nothing crashed HDF5 1.10's read.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
bad "regress-y-unstored.h5: dataset 'y' stores no data" "${SMALL[@]}" \
	--data "$REPO/tests/fuzz/corpus/dataset/regress-y-unstored.h5"
# Forged files that crash HDF5 1.10 itself (tests/fuzz/known-hdf5; the
# sanitizer build sees each crash, the plain one may read on quietly): data
# and checkpoints are read in a child process, so each is one line naming the
# file, exit 2, and nothing written.
KNOWN=$REPO/tests/fuzz/known-hdf5
forged() { # forged FILE COMMAND...
	local file=$1
	shift
	rm -rf out.ck out.jsonl
	expect_status 2 "$@"
	[ "$(grep -c '^mtrain: error: ' last.err)" = 1 ] && grep -q "^mtrain: error: $file: " last.err ||
		{ cat last.err; fail "not one line naming $file"; }
	[ ! -e out.ck ] && [ ! -e out.jsonl ] || fail "output written for $file"
}
forged "$KNOWN/ckpt-H5G_dense_iterate-bad-free.h5" "$MTRAIN" inspect "$KNOWN/ckpt-H5G_dense_iterate-bad-free.h5"
if [ -n "${ASAN_OPTIONS:-}" ]; then # the sanitizer build: HDF5's bad free is seen
	grep -q "reading it crashed the reader" last.err || { cat last.err; fail "the crash in HDF5 not told"; }
fi
forged "$KNOWN/ckpt-H5G_dense_iterate-bad-free.h5" "$MTRAIN" "${SMALL[@]}" --ckpt-dir out.ck \
	--metrics out.jsonl --resume "$KNOWN/ckpt-H5G_dense_iterate-bad-free.h5"
for f in dataset-H5C_protect-80GB-alloc dataset-H5Dread-heap-overflow dataset-H5VM_memcpyvv-segv \
	dataset-H5O_attr_exists-overflow dataset-H5MM_realloc-overflow; do
	forged "$KNOWN/$f.h5" ranks 2 "${SMALL[@]}" --ckpt-dir out.ck --metrics out.jsonl --eval-data "$KNOWN/$f.h5"
done
# This one crashes HDF5 in the plain build too (SIGSEGV): the crash is told.
forged "$KNOWN/dataset-H5VM_memcpyvv-segv.h5" "$MTRAIN" "${SMALL[@]}" --ckpt-dir out.ck \
	--data "$KNOWN/dataset-H5VM_memcpyvv-segv.h5"
grep -q "reading it crashed the reader (" last.err || { cat last.err; fail "the reader's crash not told"; }
# So does this forged Keras weights file, given to --init-from.
forged "$KNOWN/weights-H5O_loc_copy_deep-stack-overflow.h5" "$MTRAIN" "${SMALL[@]}" --ckpt-dir out.ck \
	--metrics out.jsonl --init-from "$KNOWN/weights-H5O_loc_copy_deep-stack-overflow.h5"
grep -q "reading it crashed the reader (" last.err || { cat last.err; fail "the --init-from reader's crash not told"; }
# x that is not a dataset of numbers: said as it is.
bad "bad-xgroup.h5: 'x' is a group, not a dataset" "${SMALL[@]}" --data bad-xgroup.h5
bad "bad-xlink.h5: 'x' is a link to nothing" "${SMALL[@]}" --data bad-xlink.h5
bad "bad-xcompound.h5: dataset 'x' has compound values of 8 bytes" "${SMALL[@]}" --data bad-xcompound.h5
# Gzip bombs: 200 MB of zeros in a small .gz. Declared as 93 GiB of images,
# refused before inflating; declared as 2 images, no more than that read:
# the small bomb's gzip trailer (CRC and length) is broken, so a reader that
# inflated it whole would stop at the trailer and say the gzip is corrupt.
python3 - <<'PY'
import gzip, struct
zeros = bytes(1 << 20)
for name, head in (("bomb-big.gz", struct.pack(">IIII", 0x803, 100000, 1000, 1000)),
                   ("bomb-small.gz", struct.pack(">IIII", 0x803, 2, 28, 28))):
    with gzip.open(name, "wb", compresslevel=1) as f:
        f.write(head)
        for _ in range(200):
            f.write(zeros)
with open("bomb-small.gz", "r+b") as f:
    f.seek(-8, 2)
    f.write(bytes(8))
with gzip.open("labels.gz", "wb") as f:
    f.write(struct.pack(">II", 0x801, 2) + bytes(2))
PY
expect_status 2 "$MTRAIN" import --images bomb-big.gz --labels labels.gz --out bomb.h5
grep -q "bomb-big.gz needs about 93.1 GiB per rank" last.err || { cat last.err; fail "a declared 93 GiB"; }
expect_status 2 "$MTRAIN" import --images bomb-small.gz --labels labels.gz --out bomb.h5
grep -q "bomb-small.gz: corrupt gzip" last.err && fail "the small-header bomb was inflated whole"
grep -q "bomb-small.gz: file size does not match its IDX header" last.err || { cat last.err; fail "a bomb behind a small header"; }
[ ! -e bomb.h5 ] || fail "an import of a bomb left a file"
# fuzz_idx's first finding: a short file whose header declares 1.9 TB was
# given that much memory at once; now the budget refuses it.
printf '\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x0e\x0f\x10\x11\x12\x13' >declared.idx
expect_status 2 "$MTRAIN" import --images declared.idx --labels labels.gz --out bomb.h5
grep -q "declared.idx needs about" last.err || { cat last.err; fail "a header declaring 1.9 TB"; }
# Known before it runs out: a data set or a model this rank's memory cannot
# hold (each was OOM-killed without a word).
bad "bad-vast.h5: dataset 'x' stores no data" "${SMALL[@]}" --data bad-vast.h5
bad "the model needs about [0-9.]* GiB per rank; this rank may use" "${SMALL[@]}" --layers 65536,65536
bad "wide.h5: inputs have 13 features but the training set train.h5 has 12" "${SMALL[@]}" --eval-data wide.h5
bad "--batch 100 is larger than the training set" "${SMALL[@]}" --batch 100
# Without a GPU, --device cuda is bad input (tests/gpu checks it with one).
if ! "$MTRAIN_BUILD/tests/gpu/gpu_probe" >/dev/null; then
	bad "--device cuda: " "${SMALL[@]}" --device cuda
fi
# bf16 on a CPU without AVX512_BF16 is refused unless forced (tests/mpi/bf16.sh
# forces it); oneDNN's ISA cap stands in for such a CPU where it has them.
ONEDNN_MAX_CPU_ISA=AVX2 bad "--precision bf16: this CPU has no AVX512_BF16" "${SMALL[@]}" \
	--precision bf16
bad "corrupt.h5: not a readable HDF5 file" "${SMALL[@]}" --resume corrupt.h5
bad "other: is a folder; name a checkpoint file in it" "${SMALL[@]}" --resume other
expect_status 2 "$MTRAIN" import --images train.h5 --labels train.h5 --out nodir/x.h5
grep -q "not an IDX image file" last.err || { cat last.err; fail "import of an HDF5 file"; }
bad "--ckpt-dir nodir/sub: cannot create it in nodir" "${SMALL[@]}" --ckpt-dir nodir/sub
# A metrics file that cannot be opened: the --ckpt-dir made for it goes too.
rm -rf out.ck
expect_status 2 "$MTRAIN" "${SMALL[@]}" --ckpt-dir out.ck --metrics /proc/m.jsonl
grep -q "^mtrain: error: --metrics /proc/m.jsonl: cannot open" last.err || { cat last.err; fail "metrics"; }
[ ! -e out.ck ] || fail "--ckpt-dir left behind after a bad --metrics"

# Checkpoints that mtrain did not write so (edited, or made by other tools):
# one line each, from resume and inspect alike.
"$MTRAIN" "${SMALL[@]}" --steps 8 --ckpt-dir good >/dev/null
for defect in rank5 f64 dup forge:step_in_epoch=100 forge:global_step=-5 vlconfig strarray huge holes; do
	"$MKDATA" badckpt good/ckpt-00000008.h5 "b-$defect.h5" "$defect"
done
bad "b-rank5.h5: dense/kernel has 5 dimensions; expected 1 to 4" "${SMALL[@]}" --resume b-rank5.h5
bad "b-f64.h5: dense/kernel is float64; expected float32" "${SMALL[@]}" --resume b-f64.h5
bad "b-dup.h5: dense/kernel is stored twice" "${SMALL[@]}" --resume b-dup.h5
bad "global_step 8, epoch 1 and step_in_epoch 100 do not agree with 6 steps per epoch" \
	"${SMALL[@]}" --resume b-forge:step_in_epoch=100.h5
bad "global_step -5, epoch 1 and step_in_epoch 2 do not agree" "${SMALL[@]}" --resume b-forge:global_step=-5.h5
bad "b-strarray.h5: not an mtrain checkpoint" "${SMALL[@]}" --resume b-strarray.h5
# Declared shapes the file does not hold (a forged 2^62-cell kernel crashed
# inspect; chunks never written read as zeros).
bad "b-huge.h5: dense/kernel declares .2147483648,2147483648. but the file does not hold" \
	"${SMALL[@]}" --resume b-huge.h5
bad "b-holes.h5: dense/kernel declares .12,16. but the file does not hold" "${SMALL[@]}" --resume b-holes.h5
expect_status 2 "$MTRAIN" inspect b-huge.h5
grep -q "dense/kernel declares" last.err || { cat last.err; fail "inspect of a forged shape"; }
expect_status 2 "$MTRAIN" inspect b-rank5.h5
grep -q "dense/kernel has 5 dimensions" last.err || { cat last.err; fail "inspect of a rank-5 variable"; }
# A config attribute written as h5py writes strings (variable length) reads.
expect_status 0 ranks 1 eval --ckpt b-vlconfig.h5 --device cpu

# A checkpoint of another model: one line per mismatch, name and both shapes.
rm -rf out.ck
expect_status 2 "$MTRAIN" "${SMALL[@]}" --ckpt-dir out.ck --resume other/ckpt-00000002.h5
grep -q "dense_1/kernel: checkpoint \[16,4\] vs model \[16,8\]" last.err || { cat last.err; fail "kernel mismatch"; }
grep -q "dense_2/kernel/Adam_1: checkpoint \[4,3\] vs model \[8,3\]" last.err || fail "slot mismatch"
[ "$(grep -c '^mtrain: error: ' last.err)" = 12 ] || { cat last.err; fail "want one line per mismatch (12)"; }
[ ! -e out.ck ] || fail "output written after a mismatched checkpoint"

# Resuming on another training set: the data position would mean other rows.
"$MKDATA" synth other-rows.h5 56 12 3 11
rm -rf out.ck
expect_status 2 "$MTRAIN" "${SMALL[@]}" --data other-rows.h5 --layers 16,4 --ckpt-dir out.ck \
	--resume other/ckpt-00000002.h5
grep -q "written for a training set of 84 rows, --data other-rows.h5 has 56" last.err ||
	{ cat last.err; fail "resume on other data"; }

# mtrain eval on labels the checkpoint's model has no class for.
"$MKDATA" synth five.h5 30 12 5 3
expect_status 2 "$MTRAIN" eval --ckpt other/ckpt-00000002.h5 --eval-data five.h5 --device cpu
grep -q "five.h5: y\[[0-9]*\] = [34] is not a class id (the model has 3 classes, 0 to 2); found while evaluating" last.err ||
	{ cat last.err; fail "eval labels beyond the model's classes"; }

# Under mpirun every rank exits 2, one line in all, and none hangs.
expect_status 2 ranks 3 "${SMALL[@]}" --ckpt-dir out.ck --data bad-nan.h5
[ "$(grep -c '^mtrain: error' last.err)" = 1 ] || { cat last.err; fail "want one error line from 3 ranks"; }
expect_status 2 ranks 2 "${SMALL[@]}" --ckpt-dir out.ck --batch=-1
[ ! -e out.ck ] || fail "output written under mpirun"
pass "bad input: one line, exit 2, nothing written"
