# mtrain export: the safetensors package reads every model weight bitwise as
# the checkpoint holds it (read with h5py), raw and EMA; the metadata holds
# the step and config; the EMA export, loaded into torch.nn.Sequential as
# docs/checkpoints.md shows, evaluates to what `mtrain eval --weights ema` prints on
# the default MLP and Fashion-MNIST; bad input is one line, exit 2, no file.
. "$(dirname "$0")/lib.sh"
need_python safetensors torch h5py numpy
src=/usr/share/datasets/fashion-mnist
"$MTRAIN" import --images $src/train-images-idx3-ubyte.gz --labels $src/train-labels-idx1-ubyte.gz --out train.h5 >/dev/null
"$MTRAIN" import --images $src/t10k-images-idx3-ubyte.gz --labels $src/t10k-labels-idx1-ubyte.gz --out test.h5 >/dev/null
ranks 2 --device cpu --data train.h5 --eval-data test.h5 --steps 150 --ckpt-dir ck >/dev/null
ck=ck/ckpt-00000150.h5
"$MTRAIN" export $ck --out raw.safetensors >/dev/null
"$MTRAIN" export $ck --out ema.safetensors --weights ema >/dev/null
ranks 2 eval --ckpt $ck --weights ema --device cpu >eval.txt
read -r loss acc < <(sed -n 's/.* ema loss \([0-9.]*\) acc \([0-9.]*\) .*/\1 \2/p' eval.txt)
[ -n "$acc" ] || { cat eval.txt; fail "no EMA figures from mtrain eval"; }
"$PY" - $ck raw.safetensors ema.safetensors test.h5 "$loss" "$acc" <<'PY' || fail "export"
import sys
import h5py, numpy as np, torch
from safetensors import safe_open
from safetensors.numpy import load_file
ck, raw_path, ema_path, test, want_loss, want_acc = sys.argv[1:7]
with h5py.File(ck, "r") as f:
    stored = {f[k].attrs["name"].decode() if isinstance(f[k].attrs["name"], bytes)
              else f[k].attrs["name"]: f[k][()] for k in f}
weights = sorted(n for n in stored if n != "global_step"
                 and not any(n.startswith(m + "/") for m in stored))
assert weights == ["dense/bias", "dense/kernel", "dense_1/bias", "dense_1/kernel",
                   "dense_2/bias", "dense_2/kernel"], weights
raw, ema = load_file(raw_path), load_file(ema_path)
for name, got, want in [(n, raw, n) for n in weights] + \
        [(n, ema, n + "/ExponentialMovingAverage") for n in weights]:
    t = got[name]
    assert t.dtype == np.float32 and t.shape == stored[want].shape, (name, t.shape)
    assert t.tobytes() == stored[want].tobytes(), name + " differs from " + want
assert sorted(raw) == weights and sorted(ema) == weights, (sorted(raw), sorted(ema))
with safe_open(raw_path, "np") as s:
    meta = s.metadata()
assert meta["global_step"] == "150" and meta["weights"] == "raw", meta
assert "optimizer = adam" in meta["config"], meta["config"][:200]
# docs/checkpoints.md's recipe: Keras kernels are [in, out], torch.nn.Linear's [out, in].
from safetensors.torch import load_file as load_torch
w = load_torch(ema_path)
net = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                          torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
for i, layer in enumerate(["dense", "dense_1", "dense_2"]):
    net[2 * i].weight.data = w[layer + "/kernel"].T.contiguous()
    net[2 * i].bias.data = w[layer + "/bias"]
with h5py.File(test, "r") as f:
    x = torch.from_numpy(f["x"][()].reshape(10000, -1).astype(np.float32) * np.float32(1 / 255))
    y = torch.from_numpy(f["y"][()].astype(np.int64))
with torch.no_grad():
    logits = net(x)
loss = torch.nn.functional.cross_entropy(logits, y).item()
acc = (logits.argmax(1) == y).float().mean().item()
print(f"torch: loss {loss:.4f} acc {acc:.4f}; mtrain eval: loss {want_loss} acc {want_acc}")
# Products summed in another order may move a logit by an ulp: the
# figures agree to the 4 digits mtrain prints, within one image of 10,000.
assert abs(loss - float(want_loss)) <= 1.5e-4, (loss, want_loss)
assert abs(acc - float(want_acc)) <= 1.5e-4, (acc, want_acc)
PY
# Bad input: one line naming the problem, exit 2, nothing left behind.
expect_error "not an mtrain checkpoint" "$MTRAIN" export train.h5 --out x.safetensors
expect_error "nowhere/x.safetensors: cannot write" "$MTRAIN" export $ck --out nowhere/x.safetensors
expect_error "--weights" "$MTRAIN" export $ck --out x.safetensors --weights best
expect_error "--format: 'onnx' is not one of safetensors" "$MTRAIN" export $ck --out x.safetensors --format onnx
expect_error "--out" "$MTRAIN" export $ck
# Never over the checkpoint itself; --weights ema needs every shadow.
expect_error "is the checkpoint being exported" "$MTRAIN" export $ck --out $ck
"$MTRAIN" inspect $ck >/dev/null || fail "export over the checkpoint damaged it"
"$PY" -c "import h5py, sys; f = h5py.File(sys.argv[1], 'a'); del f['dense_1.kernel.ExponentialMovingAverage']" \
	"$(cp $ck noshadow.h5 && echo noshadow.h5)"
expect_error "dense_1/kernel has no dense_1/kernel/ExponentialMovingAverage" \
	"$MTRAIN" export noshadow.h5 --out x.safetensors --weights ema
# --format safetensors, said outright, is the same file.
"$MTRAIN" export $ck --out fmt.safetensors --format safetensors >/dev/null
cmp -s fmt.safetensors raw.safetensors || fail "--format safetensors wrote another file than the default"
rm fmt.safetensors
[ "$(ls ./*.safetensors* nowhere 2>/dev/null | sort | tr '\n' ' ')" = "./ema.safetensors ./raw.safetensors " ] ||
	fail "bad exports left files: $(ls)"
pass "export: bitwise raw and EMA weights, metadata, torch accuracy $acc as mtrain eval"
