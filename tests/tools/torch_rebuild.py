#!/usr/bin/env python3
"""Rebuilds an mtrain checkpoint in PyTorch from what the file says alone, and
evaluates it:

    torch_rebuild.py CKPT EVAL_H5

prints one line,

    raw_loss X raw_acc X ema_loss X ema_acc X

the mean softmax cross-entropy over every row of EVAL_H5 and the accuracy,
with the raw weights and with the EMA weights (each trainable variable's
"<name>/ExponentialMovingAverage"; batch norm's moving statistics have no
shadow and serve both), and a summary of the rebuild on stderr.

The model comes from the checkpoint's root attribute `config` (its `model =`
line, or `layers =` and `activation =` for the MLP shorthand, and
`input-shape =`), parsed here by a parser of mtrain's grammar (docs/models.md;
src/layer_spec.c), and its variables are looked up by the names
Keras gives the layers of a functional model written in that order (each
kind counted in list order, a block's main path before its shortcut: dense,
dense_1, conv2d, batch_normalization, ...). Nothing is taken from the order
of the datasets in the file. Every dataset must be accounted for: the
model's variables and their shadows are used, the optimizer's slots of the
checkpoint's optimizer and global_step are expected; any name left over, or
any the model needs and the file lacks, is an error naming them all (exit
status 1), as is a variable whose shape is not the one the model gives it.

Written for torch 1.13 (Debian's python3-torch) and later: nothing of 2.x.
"""
import math
import re
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F

BN_EPSILON = 1e-3  # Keras' default, src/layer_bn.c
SHADOW = "ExponentialMovingAverage"
# Each optimizer's slot suffixes (base/kinds.h, OPTIM_KINDS: TF's names).
SLOTS = {"sgd": [], "momentum": ["Momentum"], "adam": ["Adam", "Adam_1"],
         "adamw": ["Adam", "Adam_1"], "lion": ["Lion"]}
ACTIVATIONS = ("relu", "gelu", "tanh", "silu")
# kind: (arguments at least, at most), as LAYER_KINDS in src/layer_spec.h.
ARGS = {"dense": (0, 1), "conv2d": (2, 4), "maxpool2d": (1, 2), "avgpool2d": (1, 2),
        "globalavgpool": (0, 0), "flatten": (0, 0), "dropout": (1, 1), "batchnorm": (0, 0)}
ARGS.update({a: (0, 0) for a in ACTIVATIONS})
# The kinds with variables, by their Keras names.
KERAS = {"dense": "dense", "conv2d": "conv2d", "batchnorm": "batch_normalization"}
UNITS_MAX, SIZE_MAX, REPEAT_MAX = 65536, 64, 1000


class RebuildError(Exception):
    pass


def text(v):
    """An HDF5 string attribute as str (h5py gives bytes or str)."""
    if isinstance(v, np.ndarray) and v.shape == ():
        v = v[()]
    return v.decode() if isinstance(v, (bytes, np.bytes_)) else str(v)


# --- the configuration text (src/config.c: config_line, config_parse_text) ---

def clean_line(line):
    """A line without its comment (one that starts the line or follows a
    blank) and surrounding blanks."""
    for m in re.finditer("#", line):
        if m.start() == 0 or line[m.start() - 1].isspace():
            line = line[:m.start()]
            break
    return line.strip()


def parse_config(config):
    """key = value lines; a value that ends in ',', '(', '[' or '|' goes on
    on the next line that is not blank."""
    lines, values, i = config.split("\n"), {}, 0
    while i < len(lines):
        s = clean_line(lines[i])
        i += 1
        if not s:
            continue
        while s[-1] in ",([|" and i < len(lines):
            more = clean_line(lines[i])
            i += 1
            if more:
                s += " " + more
        key, eq, value = s.partition("=")
        if not eq:
            raise RebuildError("config: expected 'key = value', got %r" % s)
        values[key.strip().replace("_", "-")] = value.strip()
    return values


# --- the model description (src/layer_spec.c) ---

class Layer:
    def __init__(self, kind, args=(), at=0):
        self.kind, self.args, self.at = kind, list(args), at
        self.src = []       # the layers it takes, -1 the model's input
        self.name = None    # Keras' name: dense, dense_1, conv2d, ...
        self.shape = None   # its output, (H, W, C), channels last


def int_arg(s, hi):
    if not re.fullmatch(r"\+?[0-9]+", s) or not 1 <= int(s) <= hi:
        raise ValueError(s)
    return int(s)


def parse_layer(token, at):
    """One layer's text (kind:arg:arg...) as a Layer with its arguments
    resolved to mtrain's defaults."""
    parts = token.split(":")
    kind, args = parts[0], parts[1:]
    if kind not in ARGS:
        raise RebuildError("model: layer %r at character %d: not a layer kind" % (token, at))
    lo, hi = ARGS[kind]
    try:
        if not lo <= len(args) <= hi:
            raise ValueError(token)
        if kind == "dense":
            return Layer(kind, [int_arg(args[0], UNITS_MAX) if args else 0], at)
        if kind == "conv2d":
            filters, size = int_arg(args[0], UNITS_MAX), int_arg(args[1], SIZE_MAX)
            stride = int_arg(args[2], SIZE_MAX) if len(args) > 2 else 1
            pad = args[3] if len(args) > 3 else "same"
            if pad not in ("same", "valid"):
                raise ValueError(pad)
            return Layer(kind, [filters, size, stride, pad], at)
        if kind in ("maxpool2d", "avgpool2d"):
            size = int_arg(args[0], SIZE_MAX)
            return Layer(kind, [size, int_arg(args[1], SIZE_MAX) if len(args) > 1 else size], at)
        if kind == "dropout":
            rate = float(args[0])
            if not 0.0 <= rate < 1.0:
                raise ValueError(args[0])
            return Layer(kind, [rate], at)
        return Layer(kind, [], at)
    except ValueError:
        raise RebuildError("model: layer %r at character %d: bad arguments" % (token, at))


class Parser:
    """[MAIN] is x + MAIN(x), [MAIN|SHORTCUT] MAIN(x) + SHORTCUT(x): the main
    path's layers, the shortcut's, then the add; (SEQ) groups; N*(...) and
    N*[...] repeat; blanks are ignored."""

    def __init__(self, desc):
        self.s, self.p, self.cur, self.layers = desc, 0, -1, []

    def fail(self, why):
        raise RebuildError("model: character %d: %s" % (self.p + 1, why))

    def peek(self):
        return self.s[self.p] if self.p < len(self.s) else ""

    def skip(self):
        while self.p < len(self.s) and self.s[self.p].isspace():
            self.p += 1

    def emit(self, layer, src=None):
        layer.src = [self.cur] if src is None else src
        self.layers.append(layer)
        self.cur = len(self.layers) - 1

    def parse(self):
        self.seq()
        self.skip()
        if self.p < len(self.s):
            self.fail("%r with nothing open before it" % self.peek())
        if not self.layers:
            self.fail("no layers")
        return self.layers

    def seq(self):
        while True:
            self.item()
            self.skip()
            c = self.peek()
            if c == "" or c in "|])":
                return
            if c != ",":
                self.fail("expected ',' before %r" % c)
            self.p += 1

    def close(self, char):
        self.skip()
        if self.peek() != char:
            self.fail("expected %r" % char)
        self.p += 1

    def item(self):
        self.skip()
        m = re.compile(r"([0-9]+)\s*\*").match(self.s, self.p)
        if m:
            times = int(m.group(1))
            if not 1 <= times <= REPEAT_MAX:
                self.fail("a repetition of %d" % times)
            self.p = m.end()
            self.skip()
            if self.peek() not in ("(", "["):
                self.fail("expected '(' or '[' after %d*" % times)
            body = self.p
            for _ in range(times):
                self.p = body
                self.item()
            return
        c = self.peek()
        if c == "[":
            return self.block()
        if c == "(":
            self.p += 1
            n0 = len(self.layers)
            self.seq()
            self.close(")")
            if len(self.layers) == n0:
                self.fail("an empty group")
            return
        m = re.compile(r"[^,|\])(\[*\s]*").match(self.s, self.p)
        if not m.group(0):
            self.fail("expected a layer")
        self.p = m.end()
        self.emit(parse_layer(m.group(0), m.start() + 1))

    def block(self):
        at, x = self.p + 1, self.cur
        self.p += 1
        self.skip()
        if self.peek() in ("]", "|"):
            self.fail("a block with no main path")
        self.seq()
        main, other = self.cur, x
        self.skip()
        if self.peek() == "|":
            self.p += 1
            self.cur = x
            self.skip()
            if self.peek() == "]":
                self.fail("an empty shortcut")
            self.seq()
            other = self.cur
        self.close("]")
        self.emit(Layer("add", [], at), [main, other])


def model_layers(cfg):
    """The layers the configuration describes: --model, or the MLP of
    --layers and --activation (dense:W,ACT for each width, then dense)."""
    if cfg.get("model"):
        return Parser(cfg["model"]).parse()
    act = cfg.get("activation", "relu")
    if act not in ACTIVATIONS:
        raise RebuildError("config: activation %r" % act)
    desc = "".join("dense:%s,%s," % (w, act) for w in cfg["layers"].split(",")) + "dense"
    return Parser(desc).parse()


# --- the model's shapes and variables (src/model.c, src/layers.c) ---

def window(h, w, k, s, same):
    """TF's padding: (out h, out w, top, bottom, left, right)."""
    if same:
        oh, ow = -(-h // s), -(-w // s)
        ph, pw = max((oh - 1) * s + k - h, 0), max((ow - 1) * s + k - w, 0)
        return oh, ow, ph // 2, ph - ph // 2, pw // 2, pw - pw // 2
    if h < k or w < k:
        raise RebuildError("a %dx%d window does not fit a %dx%d input" % (k, k, h, w))
    return (h - k) // s + 1, (w - k) // s + 1, 0, 0, 0, 0


def plan(layers, in_shape, classes):
    """Each layer's output shape and Keras name; the variables the model
    needs: {name: (shape, trainable)}."""
    need, counts = {}, {}
    for i, l in enumerate(layers):
        ins = [in_shape if s < 0 else layers[s].shape for s in l.src]
        h, w, c = ins[0]
        if l.kind == "add":
            if ins[0] != ins[1]:
                raise RebuildError("layer %d: an add of %s and %s" % (i + 1, ins[0], ins[1]))
            l.shape = ins[0]
        elif l.kind == "dense":
            l.shape = (1, 1, l.args[0] or classes)
        elif l.kind == "conv2d":
            f, k, s, pad = l.args
            oh, ow = window(h, w, k, s, pad == "same")[:2]
            l.shape = (oh, ow, f)
        elif l.kind in ("maxpool2d", "avgpool2d"):
            oh, ow = window(h, w, l.args[0], l.args[1], False)[:2]
            l.shape = (oh, ow, c)
        elif l.kind == "globalavgpool":
            l.shape = (1, 1, c)
        elif l.kind == "flatten":
            l.shape = (1, 1, h * w * c)
        else:  # dropout, batchnorm, activations
            l.shape = (h, w, c)
        keras = KERAS.get(l.kind)
        if keras:
            n = counts.get(keras, 0)
            counts[keras] = n + 1
            l.name = keras if n == 0 else "%s_%d" % (keras, n)
            if l.kind == "dense":
                need[l.name + "/kernel"] = ((h * w * c, l.shape[2]), True)
                need[l.name + "/bias"] = ((l.shape[2],), True)
            elif l.kind == "conv2d":
                need[l.name + "/kernel"] = ((l.args[1], l.args[1], c, l.args[0]), True)
                need[l.name + "/bias"] = ((l.args[0],), True)
            else:
                for v, trainable in (("gamma", True), ("beta", True),
                                     ("moving_mean", False), ("moving_variance", False)):
                    need["%s/%s" % (l.name, v)] = ((c,), trainable)
    if layers[-1].shape != (1, 1, classes):
        raise RebuildError("the last layer gives %s, not %d classes" % (layers[-1].shape, classes))
    return need


# --- the checkpoint ---

def read_checkpoint(path):
    """(root attributes, {name: float32 array}), each dataset by its name
    attribute, which must be its path with '/' written as '.'."""
    with h5py.File(path, "r") as f:
        attrs = {k: f.attrs[k] for k in f.attrs}
        if text(attrs.get("format", b"")) != "mtrain-checkpoint":
            raise RebuildError("%s: not an mtrain checkpoint" % path)
        values = {}
        for key in f:
            d = f[key]
            if not isinstance(d, h5py.Dataset) or "name" not in d.attrs:
                raise RebuildError("%s: /%s is not a named dataset" % (path, key))
            name = text(d.attrs["name"])
            if name.replace("/", ".") != key or name in values:
                raise RebuildError("%s: /%s holds %r" % (path, key, name))
            values[name] = d[()]
    return attrs, values


class Weights:
    """The values the forward pass asks for by name, recording each name
    asked for."""

    def __init__(self, values, trainable, ema, used):
        self.values, self.trainable, self.ema, self.used = values, trainable, ema, used

    def __call__(self, name):
        stored = name + "/" + SHADOW if self.ema and name in self.trainable else name
        self.used.add(stored)
        return torch.from_numpy(np.ascontiguousarray(self.values[stored], dtype=np.float32))


def forward(layers, x, w):
    """The logits of x ([N, C, H, W], float32) with the weights w (by name).
    Every tensor is NCHW; a flat one is [N, D, 1, 1], as mtrain's [1, 1, D]."""
    out = []
    for l in layers:
        ins = [x if s < 0 else out[s] for s in l.src]
        y = ins[0]
        if l.kind == "add":
            y = ins[0] + ins[1]
        elif l.kind == "dense":
            # Dense takes its input flattened channels last; kernel [in, out].
            flat = y.permute(0, 2, 3, 1).reshape(y.shape[0], -1)
            y = F.linear(flat, w(l.name + "/kernel").t(), w(l.name + "/bias"))
            y = y.reshape(y.shape[0], -1, 1, 1)
        elif l.kind == "conv2d":
            f, k, s, pad = l.args
            _, _, top, bottom, left, right = window(y.shape[2], y.shape[3], k, s, pad == "same")
            y = F.pad(y, (left, right, top, bottom))
            # Keras' kernel [kh, kw, in, out]; torch's [out, in, kh, kw].
            y = F.conv2d(y, w(l.name + "/kernel").permute(3, 2, 0, 1), w(l.name + "/bias"),
                         stride=s)
        elif l.kind == "maxpool2d":
            y = F.max_pool2d(y, l.args[0], l.args[1])
        elif l.kind == "avgpool2d":
            y = F.avg_pool2d(y, l.args[0], l.args[1])
        elif l.kind == "globalavgpool":
            y = y.mean(dim=(2, 3), keepdim=True)
        elif l.kind == "flatten":
            y = y.permute(0, 2, 3, 1).reshape(y.shape[0], -1, 1, 1)
        elif l.kind == "batchnorm":
            y = F.batch_norm(y, w(l.name + "/moving_mean"), w(l.name + "/moving_variance"),
                             w(l.name + "/gamma"), w(l.name + "/beta"), training=False,
                             eps=BN_EPSILON)
        elif l.kind == "relu":
            y = F.relu(y)
        elif l.kind == "gelu":
            y = F.gelu(y)  # the exact (erf) form, as base/mathfn.h
        elif l.kind == "tanh":
            y = torch.tanh(y)
        elif l.kind == "silu":
            y = F.silu(y)
        # dropout: the identity when evaluating
        if tuple(y.shape[1:]) != (l.shape[2], l.shape[0], l.shape[1]):
            raise RebuildError("%s gave %s, planned %s" % (l.kind, tuple(y.shape), l.shape))
        out.append(y)
    return out[-1].reshape(x.shape[0], -1)


def evaluate(layers, x, y, w):
    """(mean cross-entropy, accuracy) over all rows; the argmax gives ties to
    the first class, as mtrain's."""
    with torch.no_grad():
        logits = forward(layers, x, w)
        losses = F.cross_entropy(logits, y, reduction="none")
    correct = int((np.argmax(logits.numpy(), axis=1) == y.numpy()).sum())
    return float(losses.double().sum()) / len(y), correct / len(y)


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: torch_rebuild.py CKPT EVAL_H5")
    ckpt, eval_path = argv[1:]
    attrs, values = read_checkpoint(ckpt)
    if "config" not in attrs:
        raise RebuildError("%s: no config attribute (no model description)" % ckpt)
    cfg = parse_config(text(attrs["config"]))
    classes, input_dim = int(attrs["classes"]), int(attrs["input_dim"])

    with h5py.File(eval_path, "r") as f:
        x, labels = f["x"][()], f["y"][()].astype(np.int64)
    if x.dtype == np.uint8:  # io/dataset_io.h: dataset_scale_u8
        x = x.astype(np.float32) * (np.float32(1.0) / np.float32(255.0))
    x = x.astype(np.float32, copy=False)
    if cfg.get("input-shape"):
        in_shape = tuple(int(v) for v in cfg["input-shape"].split(","))
    else:
        in_shape = tuple(x.shape[1:]) if x.ndim == 4 else (1, 1, int(np.prod(x.shape[1:])))
    if len(in_shape) != 3 or math.prod(in_shape) != input_dim or \
            int(np.prod(x.shape[1:])) != input_dim:
        raise RebuildError("%s: rows of %s values; the model takes %s = %d" %
                           (eval_path, x.shape[1:], in_shape, input_dim))
    if labels.min() < 0 or labels.max() >= classes:
        raise RebuildError("%s: labels outside [0, %d)" % (eval_path, classes))

    layers = model_layers(cfg)
    need = plan(layers, in_shape, classes)
    trainable = {n for n, (_, t) in need.items() if t}
    optimizer = cfg.get("optimizer", "")
    if optimizer not in SLOTS:
        raise RebuildError("config: optimizer %r" % optimizer)
    expected = dict((n, s) for n, (s, _) in need.items())
    expected.update((n + "/" + SHADOW, need[n][0]) for n in trainable)
    slots = {n + "/" + s: need[n][0] for n in trainable for s in SLOTS[optimizer]}
    expected.update(slots)
    expected["global_step"] = (1,)

    missing = sorted(set(expected) - set(values))
    unused = sorted(set(values) - set(expected))
    wrong = sorted("%s: checkpoint %s, model %s" % (n, list(values[n].shape), list(expected[n]))
                   for n in set(expected) & set(values)
                   if tuple(values[n].shape) != tuple(expected[n]))
    if missing or unused or wrong:
        raise RebuildError("%s does not hold the variables of its model:%s%s%s" % (
            ckpt, "\n  missing: " + " ".join(missing) if missing else "",
            "\n  unused: " + " ".join(unused) if unused else "",
            "".join("\n  shape: " + s for s in wrong)))
    if int(values["global_step"][0]) != int(attrs["global_step"]):
        raise RebuildError("global_step %s, root attribute %s" %
                           (values["global_step"][0], attrs["global_step"]))

    torch.set_num_threads(1)
    xt = torch.from_numpy(np.ascontiguousarray(x.reshape((-1,) + in_shape).transpose(0, 3, 1, 2)))
    yt = torch.from_numpy(labels)
    used = set()
    raw = evaluate(layers, xt, yt, Weights(values, trainable, False, used))
    ema = evaluate(layers, xt, yt, Weights(values, trainable, True, used))
    # Every variable and shadow went into the figures (slots and
    # global_step are the optimizer's, not the model's).
    left = sorted(set(values) - used - set(slots) - {"global_step"})
    if left:
        raise RebuildError("%s: never used: %s" % (ckpt, " ".join(left)))

    print("%s: %d layers, %d variables (%d trainable, %d shadows, %d moving statistics, "
          "%d optimizer slots, global_step %s), %d rows of %s" %
          (ckpt, len(layers), len(values), len(trainable), len(trainable),
           len(need) - len(trainable), len(slots), attrs["global_step"], len(labels),
           "x".join(map(str, in_shape))), file=sys.stderr)
    print("raw_loss %.9g raw_acc %.7g ema_loss %.9g ema_acc %.7g" % (raw + ema))


if __name__ == "__main__":
    try:
        main(sys.argv)
    except RebuildError as e:
        print("torch_rebuild: %s" % e, file=sys.stderr)
        sys.exit(1)
