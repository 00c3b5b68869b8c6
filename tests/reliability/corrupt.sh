# A checkpoint must never resume wrong. Each defect below once went
# unnoticed or stopped a requeue loop for good; now every one is corruption:
# --resume auto skips the file with a warning naming it and the check, and
# continues from the checkpoint before it; --resume FILE stops with one line
# (exit 2). A valid checkpoint of another run (its digests match) is told
# apart: a clear user error, not "corrupt".
. "$(dirname "$0")/../mpi/lib.sh"
make_data
ranks 2 "${SMALL[@]}" --steps 12 --ckpt-dir good >/dev/null
cp good/ckpt-00000006.h5 six.h5
check() { # check DEFECT WHAT: the newest checkpoint with DEFECT is skipped for WHAT
	local defect=$1 what=$2
	rm -rf ck && mkdir ck
	cp six.h5 ck/ckpt-00000006.h5
	"$MKDATA" badckpt good/ckpt-00000012.h5 ck/ckpt-00000012.h5 "$defect"
	ranks 2 "${SMALL[@]}" --steps 18 --ckpt-dir ck >log 2>err ||
		{ cat log err; fail "$defect: the run did not fall back"; }
	grep -q "resumed from ck/ckpt-00000006.h5 at step 6" log || { cat log err; fail "$defect: no fallback to step 6"; }
	grep -q "skipping checkpoint: ck/ckpt-00000012.h5: .*$what" err || { cat err; fail "$defect: the warning does not say '$what'"; }
	grep -q "from another run" err && { cat err; fail "$defect: its own corrupt checkpoint called another run's"; }
	"$MKDATA" badckpt good/ckpt-00000012.h5 bad.h5 "$defect"
	expect_status 2 ranks 2 "${SMALL[@]}" --steps 18 --ckpt-dir other --resume bad.h5
	grep -q "$what" last.err || { cat last.err; fail "$defect: --resume FILE does not say '$what'"; }
}
# A value changed behind the Fletcher32 checksum's back (rewritten through
# HDF5, so the chunk checksum matches).
check nan "dense/kernel does not match its digest (corrupt)"
# A one-byte edit of a root attribute: batch, seed (a requeue loop used to fail forever).
check batch=7 "root attributes do not match their digest"
check seed=3 "root attributes do not match their digest"
# The datatype message: values read as another type.
check be "dense/kernel is float32 (not IEEE little-endian); expected float32"
# A dataset whose path is not its name's.
check moved "dense/kernel is stored as dense.kernel2, not where its name puts it"
# The global_step dataset edited (its digest; for a format 1 file, the root
# attribute it must equal).
check stepdset "global_step does not match its digest"
# Chunks never written (they read as zeros).
check holes "dense/kernel declares .12,16. but the file does not hold"
# One byte of the kernel's datatype message flipped on disk, and the
# kernel's chunk address zeroed where the file indexes it: HDF5 cannot open
# the dataset (its header fails its checksum). The variable is there,
# unreadable: corrupt, not "missing vs model".
check dtypebyte "the dataset dense.kernel is damaged: its object header cannot be read"
check chunkindex "the dataset dense.kernel is damaged: its object header cannot be read"
# A file that crashes its reader, as some forged files crash HDF5 1.10
# (tests/fuzz/known-hdf5): checkpoints are read in a child process, which a
# test fault crashes here; the training process lives on and falls back.
rm -rf ck && mkdir ck
cp six.h5 ck/ckpt-00000006.h5
cp good/ckpt-00000012.h5 ck/
MTRAIN_TEST_FAULT=reader:ckpt-00000012 ranks 2 "${SMALL[@]}" --steps 18 --ckpt-dir ck >log 2>err ||
	{ cat log err; fail "a crashing reader: the run did not fall back"; }
grep -q "resumed from ck/ckpt-00000006.h5 at step 6" log || { cat log err; fail "a crashing reader: no fallback to step 6"; }
grep -q "skipping checkpoint: ck/ckpt-00000012.h5: reading it crashed the reader (signal 11, in a child process)" err ||
	{ cat err; fail "a crashing reader: no warning naming the crash"; }
MTRAIN_TEST_FAULT=reader expect_status 2 "$MTRAIN" inspect good/ckpt-00000012.h5
grep -q "^mtrain: error: good/ckpt-00000012.h5: reading it crashed the reader" last.err || { cat last.err; fail "inspect: no line for the crash"; }
# Another run's valid checkpoint: a user error naming the difference.
"$MKDATA" badckpt good/ckpt-00000012.h5 other.h5 forge:batch=7
expect_status 2 ranks 2 "${SMALL[@]}" --steps 18 --ckpt-dir other --resume other.h5
grep -q "written with --batch 7, this run has --batch 14" last.err || { cat last.err; fail "another run's checkpoint"; }
grep -q "corrupt\|digest" last.err && fail "another run's checkpoint called corrupt"
# Checkpoints are written with HDF5 1.10's checksummed metadata (superblock
# version 3; format 1 files had version 0, without checksums).
h5dump -B -H good/ckpt-00000012.h5 >superblock.txt
grep -q "SUPERBLOCK_VERSION 3" superblock.txt || { head superblock.txt; fail "not HDF5 1.10's file format"; }
pass "9 kinds of corruption and a crashing reader skipped by --resume auto and refused by --resume FILE; another run told apart"
