#!/usr/bin/env bash
# Installs what mtrain needs on Debian 12 (as root, only what is missing) and
# builds it into ./build. Used by the README's two commands and by CI.
#   jobs/setup.sh            release build
#   jobs/setup.sh --tests    also what the tests use: HDF5's tools (h5diff),
#                            Slurm and munge (the Slurm test starts its own),
#                            python3 (to parse the metrics file as JSON;
#                            its PIL writes the image-folder test's files),
#                            gnuplot (jobs/plot.sh), and a Python venv in
#                            the build folder (py/) that sees Debian's torch
#                            and h5py and has safetensors and tensorboard
#                            from PyPI (the export and TensorBoard tests),
#                            and a venv with TensorFlow (CPU), Keras 3 and
#                            keras_hub from PyPI for the keras tests, kept
#                            outside the tree (MTRAIN_KERAS_VENV, default
#                            ~/.cache/mtrain/keras-venv: 1.6 GB, made once
#                            per machine) and linked as build/keras-venv
#   jobs/setup.sh --torch    also Debian's python3-torch, for the PyTorch
#                            peer of bench/bench.sh (bench/bench_torch.py);
#                            not in the default setup (CI time)
#   MTRAIN_WERROR=ON jobs/setup.sh   warnings as errors (CI)
#   MTRAIN_SANITIZE=ON jobs/setup.sh ASan + UBSan build (CPU only) into
#                                    ./build-asan instead
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config openmpi-bin libopenmpi-dev libhdf5-dev
	libopenblas-dev zlib1g-dev libpng-dev libjpeg62-turbo-dev libjansson-dev libzip-dev libsentencepiece-dev
	libdnnl-dev dataset-fashion-mnist jargon-text)
[ "${1:-}" = --torch ] && packages+=(python3 python3-torch)
[ "${1:-}" = --tests ] && packages+=(hdf5-tools slurm-wlm munge python3 python3-venv
	python3-numpy python3-h5py python3-pil python3-torch gnuplot-nox iproute2 util-linux procps)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	if [ "$(id -u)" != 0 ]; then
		echo "setup: run as root (or sudo) to install these Debian packages" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build=build type=Release
if [ "${MTRAIN_SANITIZE:-OFF}" = ON ]; then
	build=build-asan type=RelWithDebInfo # line numbers in the reports
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=$type -DMTRAIN_WERROR="${MTRAIN_WERROR:-OFF}" \
	-DMTRAIN_SANITIZE="${MTRAIN_SANITIZE:-OFF}" >/dev/null
cmake --build "$build" -j "$(nproc)"

# The tests' Python: Debian's python3 (torch and h5py are its packages),
# with safetensors and tensorboard from PyPI. Without PyPI the tests that
# need them report skipped, saying which module is missing (and fail under
# MTRAIN_NO_SKIP=1, as in CI).
if [ "${1:-}" = --tests ]; then
	py=$build/py/bin/python
	[ -x "$py" ] || /usr/bin/python3 -m venv --system-site-packages "$build/py"
	"$py" -c 'import safetensors, tensorboard' 2>/dev/null ||
		"$py" -m pip install -q --disable-pip-version-check safetensors tensorboard ||
		echo "setup: warning: pip could not install safetensors and tensorboard" >&2
fi

# Keras, the client of `mtrain export --format keras` and the source of
# --init-from's Keras files (tests/keras): its own venv (TensorFlow brings
# its own numpy), versions pinned to those the tests were written against.
if [ "${1:-}" = --tests ]; then
	kv=${MTRAIN_KERAS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/mtrain/keras-venv}
	# keras_hub (its PositionEmbedding, for the ViT's export) without its
	# dependencies: its tensorflow-text would bring TensorFlow proper beside
	# tensorflow-cpu; importing keras_hub needs regex and tokenizers only.
	has='import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in ("tensorflow", "keras", "h5py", "keras_hub")))'
	if ! "$kv/bin/python" -c "$has" 2>/dev/null; then
		echo "setup: installing TensorFlow (CPU), Keras and keras_hub into $kv (once a machine)"
		{ [ -x "$kv/bin/python" ] || /usr/bin/python3 -m venv "$kv"; } &&
			"$kv/bin/pip" install -q --disable-pip-version-check tensorflow-cpu==2.21.0 \
				keras==3.15.1 h5py==3.14.0 &&
			"$kv/bin/pip" install -q --disable-pip-version-check --no-deps keras-hub==0.32.0 \
				regex==2026.11.19 tokenizers==0.23.3 ||
			echo "setup: warning: pip could not install TensorFlow, Keras and keras_hub into $kv" >&2
	fi
	ln -sfn "$kv" "$build/keras-venv"
fi
