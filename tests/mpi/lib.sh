# Shared by the multi-rank test drivers: where the programs are, mpirun as the
# tests need it (oversubscribed: 4 ranks on 2 cores), a scratch folder removed
# on exit, fixtures, and assertions that stop the test with a reason.
set -euo pipefail
: "${MTRAIN_BUILD:?set by CTest: the build folder}"
MTRAIN=$MTRAIN_BUILD/mtrain
MKDATA=$MTRAIN_BUILD/tests/mkdata
CMP=$MTRAIN_BUILD/tests/ckpt_compare
MPIRUN=${MPIRUN:-mpirun}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mtrain-test.XXXXXX")
TEST_SCRIPT=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
MOUNTS=() # small_disk's, unmounted before WORK goes
# Background jobs (a signalled mpirun) never outlive the test.
trap 'jobs -p | xargs -r kill -9 2>/dev/null; wait 2>/dev/null
	for m in ${MOUNTS[@]+"${MOUNTS[@]}"}; do umount "$m" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
cd "$WORK"

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# skip_or_fail REASON: the test cannot run here, for want of something the
# test command provides (jobs/setup.sh --tests: the Python modules, gnuplot,
# Slurm; or what it needs of the machine: root, namespaces, cgroups). It
# skips (77), saying why; under MTRAIN_NO_SKIP=1 (CI sets it: .ci/run) it
# fails instead, since there a skip would hide a test that never ran. Every
# test's skip goes through here but the cuda tests': no GPU is the machine's
# doing, and those skip regardless (tests/gpu/gpu.h).
skip_or_fail() {
	if [ "${MTRAIN_NO_SKIP:-0}" = 1 ]; then
		echo "FAIL: cannot run here: $* (MTRAIN_NO_SKIP=1: no skipping)" >&2
		exit 1
	fi
	echo "SKIPPED: $*"
	exit 77
}

# small_disk DIR SIZE: a tmpfs of SIZE (mount's size=, e.g. 512k) at DIR
# (made), unmounted on exit: a disk that fills. Root mounts one; anyone else
# gets one in a user and mount namespace of their own (unshare -rm: root
# over their own mounts only), where the test runs again from its start.
# Skips (skip_or_fail) only where neither can be had.
small_disk() {
	if [ "$(id -u)" != 0 ] && [ -z "${MTRAIN_SMALL_DISK_NS:-}" ] && unshare -rm true 2>/dev/null; then
		cd / && rm -rf "$WORK"
		MTRAIN_SMALL_DISK_NS=1 exec unshare -rm bash "$TEST_SCRIPT"
	fi
	# Open MPI's session folder in ours: in the namespace, /tmp's ompi.*
	# of the real root belongs to nobody we can be.
	export OMPI_MCA_orte_tmpdir_base=$WORK
	mkdir -p "$1"
	mount -t tmpfs -o size="$2" tmpfs "$1" 2>/dev/null ||
		skip_or_fail "cannot mount a tmpfs (not root, and no user namespace: unshare -rm failed)"
	MOUNTS+=("$WORK/$1")
}

# png_folder DIR N SIDE CLASS...: DIR/CLASS/0.png .. N-1.png for each
# CLASS, SIDE x SIDE gray pictures (mtrain preview's of a synthetic row),
# an image folder for `mtrain import --image-dir` without Python's PIL.
png_folder() {
	local dir=$1 n=$2 side=$3 cls i
	shift 3
	"$MKDATA" synth png-row.h5 2 $((side * side)) 2 1
	"$MTRAIN" preview --data png-row.h5 --input-shape "$side,$side,1" --rows 1 \
		--out png-row.png >/dev/null || fail "png_folder: mtrain preview"
	for cls in "$@"; do
		mkdir -p "$dir/$cls"
		for ((i = 0; i < n; i++)); do cp png-row.png "$dir/$cls/$i.png"; done
	done
	rm png-row.h5 png-row.png
}

# ranks N ARGS...: mtrain on N ranks; never hangs past 120 s.
ranks() {
	local n=$1
	shift
	timeout 120 "$MPIRUN" --oversubscribe -np "$n" "$MTRAIN" "$@"
}

# A small learnable data set: 84 rows, 12 features, 3 classes, so a global
# batch of 14 makes 6 steps an epoch and does not divide by 3 or 4 ranks.
make_data() {
	"$MKDATA" synth train.h5 84 12 3 11
	"$MKDATA" synth eval.h5 30 12 3 12
}

# The flags every small run shares: the CPU path, also on a GPU machine
# (tests/gpu covers the GPU).
SMALL=(--device cpu --data train.h5 --eval-data eval.h5 --layers 16,8 --batch 14 --seed 5 --log-every 5)

# same_ckpt A B [RTOL]: equal variables (bitwise without RTOL).
same_ckpt() { "$CMP" "$@" || fail "checkpoints differ: $*"; }

# ema_acc METRICS: the EMA accuracy of the last eval line of a metrics file;
# fails unless there is one and it is a number.
ema_acc() {
	local acc
	acc=$(grep '"event":"eval"' "$1" | tail -n 1 | sed -n 's/.*"ema_acc":\([0-9.]*\).*/\1/p')
	[[ $acc =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "no ema_acc in the last eval line of $1"
	echo "$acc"
}

# expect_status WANT CMD...: runs CMD, output in last.out / last.err.
expect_status() {
	local want=$1 got=0
	shift
	"$@" >last.out 2>last.err || got=$?
	[ "$got" = "$want" ] || { cat last.out last.err >&2; fail "exit status $got, want $want: $*"; }
}

# expect_error PATTERN CMD...: CMD exits 2 and says why in exactly one line
# on stderr, "mtrain: error: ..." holding PATTERN (grep -E).
expect_error() { one_error_line . "$@"; }
# expect_job_error PATTERN CMD...: the same for a job under mpirun, whose
# own report of the ranks' exit status follows: exactly one "mtrain: error:"
# line among stderr's.
expect_job_error() { one_error_line '^mtrain: error' "$@"; }
# one_error_line COUNTED PATTERN CMD...: exit 2; of stderr's lines matching
# COUNTED, exactly one, and it is "mtrain: error: ..." holding PATTERN.
one_error_line() {
	local counted=$1 pattern=$2
	shift 2
	expect_status 2 "$@"
	[ "$(grep -c "$counted" last.err)" = 1 ] && grep -qE "^mtrain: error: .*$pattern" last.err ||
		{ cat last.err >&2; fail "want one error line holding '$pattern': $*"; }
}

# PY: the tests' Python (a venv jobs/setup.sh --tests makes in the build
# folder, seeing Debian's python3-torch and python3-h5py, with safetensors
# and tensorboard from PyPI). need_python MODULE...: skips the test
# (skip_or_fail), saying which module is missing, unless it imports them all.
PY=$MTRAIN_BUILD/py/bin/python
need_python() {
	local m
	for m in "$@"; do
		[ -x "$PY" ] && "$PY" -c "import $m" 2>/dev/null ||
			skip_or_fail "Python module $m is not installed (jobs/setup.sh --tests installs it)"
	done
}

# KPY: Keras' Python (TensorFlow CPU, Keras 3 and h5py in a venv that
# jobs/setup.sh --tests makes once a machine, linked as build/keras-venv).
# need_keras: skips the test (skip_or_fail) unless it has them.
KPY=$MTRAIN_BUILD/keras-venv/bin/python
need_keras() {
	[ -x "$KPY" ] && "$KPY" -c 'import h5py, keras' 2>/dev/null ||
		skip_or_fail "no Keras venv at $MTRAIN_BUILD/keras-venv (jobs/setup.sh --tests makes it)"
	export TF_CPP_MIN_LOG_LEVEL=3 KERAS_BACKEND=tensorflow
}
