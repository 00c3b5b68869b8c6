"""mtrain's models rebuilt in PyTorch from a checkpoint alone, for the tools
that check mtrain against PyTorch (torch_rebuild.py evaluates a checkpoint,
torch_reference.py compares gradients and AdamW steps):

    m = load(CKPT)                            the model and every dataset
    x, labels, in_shape = rows(DATA, m)       DATA's rows; m planned on them
    logits = forward(m.layers, to_torch(x, in_shape), w)
    x, labels = token_windows(DATA, m, starts)  a file of tokens' windows
                                              (a language model: logits
                                              [N, T * classes], labels [N, T])

The model comes from the checkpoint's root attribute `config` (mtrain_spec.py
reads it: its `model =` line, or the MLP of `layers =` and `activation =`,
and `input-shape =`), and its variables are looked up by their Keras names
(mtrain_spec.plan). Nothing is taken from the order of the datasets in the
file. Every dataset must be accounted for: the model's variables and their
shadows are used, the optimizer's slots of the checkpoint's optimizer and
global_step are expected; any name left over, or any the model needs and
the file lacks, is an error naming them all, as is a variable whose shape
is not the one the model gives it.

In forward() an image is an NCHW tensor (a flat row [N, D, 1, 1]) and a
sequence of tokens [N, T, D]. Written for torch 1.13 (Debian's
python3-torch) and later: nothing of 2.x.
"""
import math

import h5py
import numpy as np
import torch
import torch.nn.functional as F

from mtrain_spec import RebuildError, model_layers, parse_config, plan, text, window

BN_EPSILON = 1e-3  # Keras' default, src/layer_bn.c
SHADOW = "ExponentialMovingAverage"
# Each optimizer's slot suffixes (base/kinds.h, OPTIM_KINDS: TF's names).
SLOTS = {"sgd": [], "momentum": ["Momentum"], "adam": ["Adam", "Adam_1"],
         "adamw": ["Adam", "Adam_1"], "lion": ["Lion"]}


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


class Model:
    """A checkpoint's model: cfg (its configuration), layers (planned once
    rows() gives the input shape), values ({name: array}, every dataset),
    need ({name: (shape, trainable)}), trainable (the names), slots (the
    optimizer's datasets), classes, input_dim, global_step."""


def load(ckpt):
    """The model of checkpoint ckpt and its values, every dataset accounted
    for (planned by rows())."""
    m = Model()
    m.path = ckpt
    m.attrs, m.values = read_checkpoint(ckpt)
    if "config" not in m.attrs:
        raise RebuildError("%s: no config attribute (no model description)" % ckpt)
    m.cfg = parse_config(text(m.attrs["config"]))
    m.classes, m.input_dim = int(m.attrs["classes"]), int(m.attrs["input_dim"])
    m.global_step = int(m.attrs["global_step"])
    m.layers = model_layers(m.cfg)
    m.optimizer = m.cfg.get("optimizer", "")
    if m.optimizer not in SLOTS:
        raise RebuildError("config: optimizer %r" % m.optimizer)
    return m


def check_values(m):
    """Every dataset of m's checkpoint is a variable of its planned model, a
    shadow, a slot of its optimizer or global_step, shaped as the model
    says, and every variable is there; else one error naming them all."""
    m.trainable = {n for n, (_, t) in m.need.items() if t}
    expected = dict((n, s) for n, (s, _) in m.need.items())
    expected.update((n + "/" + SHADOW, m.need[n][0]) for n in m.trainable)
    m.slots = {n + "/" + s: m.need[n][0] for n in m.trainable for s in SLOTS[m.optimizer]}
    expected.update(m.slots)
    expected["global_step"] = (1,)
    values = m.values
    missing = sorted(set(expected) - set(values))
    unused = sorted(set(values) - set(expected))
    wrong = sorted("%s: checkpoint %s, model %s" % (n, list(values[n].shape), list(expected[n]))
                   for n in set(expected) & set(values)
                   if tuple(values[n].shape) != tuple(expected[n]))
    if missing or unused or wrong:
        raise RebuildError("%s does not hold the variables of its model:%s%s%s" % (
            m.path, "\n  missing: " + " ".join(missing) if missing else "",
            "\n  unused: " + " ".join(unused) if unused else "",
            "".join("\n  shape: " + s for s in wrong)))
    if int(values["global_step"][0]) != m.global_step:
        raise RebuildError("global_step %s, root attribute %s" %
                           (values["global_step"][0], m.global_step))


def rows(path, m):
    """(x float32 [N, ...], labels int64 [N], input shape (H, W, C)) of the
    data file path as m's model takes them (uint8 scaled by 1/255 as
    io/dataset_io.h's dataset_scale_u8 does), the model planned on that
    shape and the checkpoint's values checked against it."""
    with h5py.File(path, "r") as f:
        x, labels = f["x"][()], f["y"][()].astype(np.int64)
    if x.dtype == np.uint8:
        x = x.astype(np.float32) * (np.float32(1.0) / np.float32(255.0))
    x = x.astype(np.float32, copy=False)
    if m.cfg.get("input-shape"):
        in_shape = tuple(int(v) for v in m.cfg["input-shape"].split(","))
    else:
        in_shape = tuple(x.shape[1:]) if x.ndim == 4 else (1, 1, int(np.prod(x.shape[1:])))
    if len(in_shape) != 3 or math.prod(in_shape) != m.input_dim or \
            int(np.prod(x.shape[1:])) != m.input_dim:
        raise RebuildError("%s: rows of %s values; the model takes %s = %d" %
                           (path, x.shape[1:], in_shape, m.input_dim))
    if labels.min() < 0 or labels.max() >= m.classes:
        raise RebuildError("%s: labels outside [0, %d)" % (path, m.classes))
    m.need = plan(m.layers, in_shape, m.classes)
    check_values(m)
    return x, labels, in_shape


def is_tokens(path):
    """Whether the data file path is a file of tokens (io/dataset_tokens.c)."""
    with h5py.File(path, "r") as f:
        return "tokens" in f and "x" not in f


def token_windows(path, m, starts):
    """(x float32 [N, T] token ids, labels int64 [N, T]) of the windows of
    T + 1 tokens of path's 'tokens' beginning at starts (T: the model's
    input width, its --context), the model planned on rows of T ids of the
    file's vocabulary and the checkpoint's values checked against it."""
    t = m.input_dim
    with h5py.File(path, "r") as f:
        tokens, vocab = f["tokens"][()].astype(np.int64), int(f.attrs["vocab_size"])
    if min(starts) < 0 or max(starts) + t + 1 > len(tokens):
        raise RebuildError("%s: windows of %d from %s: past its %d tokens" %
                           (path, t + 1, starts, len(tokens)))
    x = np.stack([tokens[s:s + t] for s in starts]).astype(np.float32)
    labels = np.stack([tokens[s + 1:s + t + 1] for s in starts])
    m.need = plan(m.layers, (1, 1, t), m.classes, vocab)
    check_values(m)
    return x, labels


def to_torch(x, in_shape, dtype=torch.float32):
    """Rows x as forward() takes them: [N, C, H, W]."""
    x = np.ascontiguousarray(x.reshape((-1,) + in_shape).transpose(0, 3, 1, 2))
    return torch.from_numpy(x).to(dtype)


# --- the forward pass ---

def attention(x, w, name, heads, causal):
    """Keras' MultiHeadAttention(heads, key_dim = D / heads) as
    self-attention of x [N, T, D]: the query scaled by 1/sqrt(key_dim)
    before its product with the keys; causal: token t attends to s <= t."""
    n, t, d = x.shape
    key = d // heads

    def project(part):  # [N, T, heads, key]
        return torch.einsum("ntd,dhk->nthk", x, w("%s/%s/kernel" % (name, part))) + \
            w("%s/%s/bias" % (name, part))
    q = project("query") * (1.0 / math.sqrt(key))
    k, v = project("key"), project("value")
    scores = torch.einsum("nthk,nshk->nhts", q, k)
    if causal:
        later = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(later, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    o = torch.einsum("nhts,nshk->nthk", probs, v)
    return torch.einsum("nthk,hkd->ntd", o, w(name + "/attention_output/kernel")) + \
        w(name + "/attention_output/bias")


def channels_last(y, fn):
    """fn over an image's last axis (channels): NCHW in and out."""
    return fn(y.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


def forward(layers, x, w, training=False):
    """The logits [N, classes] of x ([N, C, H, W]) with the weights w (a
    function of a variable's name). training: batch norm and dropout as
    training has them, which only a model without either (or dropout of
    rate 0) can be (their masks are mtrain's own draws)."""
    out = []
    for l in layers:
        ins = [x if s < 0 else out[s] for s in l.src]
        y = ins[0]
        if training and (l.kind == "batchnorm" or (l.kind == "dropout" and l.args[0]) or
                         (l.kind == "attention" and l.args[2])):
            raise RebuildError("%s at character %d: not rebuilt for training" % (l.kind, l.at))
        if l.kind == "add":
            y = ins[0] + ins[1]
        elif l.kind == "embedding":  # rows of T ids ([N, T, 1, 1]): [N, T, D]
            y = w(l.name + "/embeddings")[y.reshape(y.shape[0], -1).long()]
        elif l.kind == "dense" and l.seq:  # on each token's last axis
            y = F.linear(y, w(l.name + "/kernel").t(), w(l.name + "/bias"))
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
        elif l.kind == "globalavgpool":  # over a sequence: the mean of its tokens
            y = y.mean(dim=1) if y.dim() == 3 else y.mean(dim=(2, 3))
            y = y.reshape(y.shape[0], -1, 1, 1)
        elif l.kind == "flatten":
            flat = y if y.dim() == 3 else y.permute(0, 2, 3, 1)
            y = flat.reshape(y.shape[0], -1, 1, 1)
        elif l.kind == "batchnorm":
            y = F.batch_norm(y, w(l.name + "/moving_mean"), w(l.name + "/moving_variance"),
                             w(l.name + "/gamma"), w(l.name + "/beta"), training=False,
                             eps=BN_EPSILON)
        elif l.kind == "layernorm":  # a sequence's tokens, or an image's pixels
            def norm(t):
                return F.layer_norm(t, (t.shape[-1],), w(l.name + "/gamma"),
                                    w(l.name + "/beta"), eps=l.args[0])
            y = norm(y) if y.dim() == 3 else channels_last(y, norm)
        elif l.kind == "tokens":  # Reshape((H*W, C)) of an NHWC image
            y = y.permute(0, 2, 3, 1).reshape(y.shape[0], -1, y.shape[1])
        elif l.kind == "posembed":
            y = y + w(l.name + "/embeddings")
        elif l.kind == "unembed":  # the embedding's table (l.name is its layer's) again
            y = y @ w(l.name + "/embeddings").t()
        elif l.kind == "attention":
            y = attention(y, w, l.name, l.args[0], l.args[1])
        elif l.kind == "relu":
            y = F.relu(y)
        elif l.kind == "gelu":
            y = F.gelu(y)  # the exact (erf) form, as base/mathfn.h
        elif l.kind == "gelu_tanh":
            y = F.gelu(y, approximate="tanh")
        elif l.kind == "tanh":
            y = torch.tanh(y)
        elif l.kind == "silu":
            y = F.silu(y)
        # dropout: the identity when evaluating
        want = (l.shape[1], l.shape[2]) if l.seq else (l.shape[2], l.shape[0], l.shape[1])
        if tuple(y.shape[1:]) != want:
            raise RebuildError("%s gave %s, planned %s" % (l.kind, tuple(y.shape), want))
        out.append(y)
    # [N, classes], or a language model's [N, T * classes]
    return out[-1].reshape(x.shape[0], -1)
