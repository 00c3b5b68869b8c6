# What the Keras tests (tests/keras/*.sh) share, on top of tests/mpi/lib.sh:
# Keras' venv (or the test skips), keras_hub when asked, Fashion-MNIST as
# train.h5 and test.h5, a trained checkpoint's exports, and Python in the
# venv with agree.py importable. Sourced from the test's scratch folder.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../mpi/lib.sh"
need_keras

need_keras_hub() {
	"$KPY" -c 'import keras_hub' 2>/dev/null ||
		skip_or_fail "keras_hub is not in the Keras venv (jobs/setup.sh --tests installs it)"
}

# Fashion-MNIST's IDX files imported as train.h5 and test.h5.
import_fmnist() {
	local src=/usr/share/datasets/fashion-mnist
	"$MTRAIN" import --images $src/train-images-idx3-ubyte.gz \
		--labels $src/train-labels-idx1-ubyte.gz --out train.h5 >/dev/null
	"$MTRAIN" import --images $src/t10k-images-idx3-ubyte.gz \
		--labels $src/t10k-labels-idx1-ubyte.gz --out test.h5 >/dev/null
}

# export_all CKPT LAYERS: raw.keras, ema.keras and ema.weights.h5 of CKPT,
# eval.txt (mtrain eval of both weights on 2 ranks), inspect.txt, and
# names.txt, the layer names of inspect's model section (its first
# column), which must be LAYERS.
export_all() {
	local ck=$1 layers=$2
	"$MTRAIN" export "$ck" --format keras --out raw.keras >/dev/null
	"$MTRAIN" export "$ck" --format keras --weights ema --out ema.keras >/dev/null
	"$MTRAIN" export "$ck" --format keras-weights --weights ema --out ema.weights.h5 >/dev/null
	ranks 2 eval --ckpt "$ck" --weights both --device cpu >eval.txt
	"$MTRAIN" inspect "$ck" >inspect.txt
	sed -n '/^model (/,/ layers on input/p' inspect.txt | sed '1,2d;$d' | awk '{print $1}' >names.txt
	[ "$(wc -l <names.txt)" = "$layers" ] ||
		{ cat inspect.txt; fail "inspect shows no $layers-layer model"; }
}

# step0 METRICS: "loss acc" of a run's evaluation before its first step
# (raw weights), from its --metrics file; nothing when there was none.
step0() {
	grep '"event":"eval"' "$1" | grep '"step":0,' |
		sed -n 's/.*"raw_loss":\([0-9.e-]*\).*"raw_acc":\([0-9.e-]*\).*/\1 \2/p'
}

# keras ARGS...: Python in Keras' venv with agree.py's agree() and
# eval_figures() importable, the program from stdin.
keras() { PYTHONPATH=$here "$KPY" - "$@"; }
