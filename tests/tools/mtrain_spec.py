"""mtrain's configuration text and model description read in Python, for
the tools that rebuild its checkpoints elsewhere (mtrain_torch.py): the
stored configuration's `key = value` lines (src/config.c), the `--model`
grammar (docs/models.md; src/layer_spec.c: layers, blocks, repetitions,
mtrain's defaults), and the model's plan (src/model.c, src/layers.c): each
layer's output shape and the variables it has, by the names Keras gives the
layers of a functional model written in that order (each kind counted in
list order, a block's main path before its shortcut: dense, dense_1,
conv2d, batch_normalization, layer_normalization, multi_head_attention,
position_embedding, ...).

Shapes are mtrain's, per row and channels last: (H, W, C); a flat row is
(1, 1, D) and a sequence of T tokens of width D is (1, T, D) (Layer.seq).
"""
import re

import numpy as np

ACTIVATIONS = ("relu", "gelu", "tanh", "silu", "gelu_tanh")
# kind: (arguments at least, at most), as LAYER_KINDS in src/layer_spec.h.
ARGS = {"dense": (0, 1), "conv2d": (2, 4), "maxpool2d": (1, 2), "avgpool2d": (1, 2),
        "globalavgpool": (0, 0), "flatten": (0, 0), "dropout": (1, 1), "batchnorm": (0, 0),
        "layernorm": (0, 1), "attention": (1, 3), "embedding": (1, 1), "posembed": (0, 0),
        "tokens": (0, 0), "unembed": (0, 0)}
ARGS.update({a: (0, 0) for a in ACTIVATIONS})
# The kinds with variables, by their Keras names.
KERAS = {"dense": "dense", "conv2d": "conv2d", "batchnorm": "batch_normalization",
         "layernorm": "layer_normalization", "attention": "multi_head_attention",
         "posembed": "position_embedding", "embedding": "embedding"}
UNITS_MAX, SIZE_MAX, REPEAT_MAX, HEADS_MAX = 65536, 64, 1000, 1024
LN_EPSILON = 1e-3  # layernorm's default (Keras')


class RebuildError(Exception):
    pass


def text(v):
    """An HDF5 string attribute as str (h5py gives bytes or str)."""
    if isinstance(v, np.ndarray) and v.shape == ():
        v = v[()]
    return v.decode() if isinstance(v, (bytes, np.bytes_)) else str(v)


def f32(v):
    """v as mtrain holds it: rounded to float32 (an option, an epsilon)."""
    return float(np.float32(v))


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
        self.seq = False    # its output is a sequence (1, T, D)


def int_arg(s, hi):
    if not re.fullmatch(r"\+?[0-9]+", s) or not 1 <= int(s) <= hi:
        raise ValueError(s)
    return int(s)


def rate_arg(s):
    """A dropout rate, 0 <= RATE < 1 (src/layer_spec.c: rate_arg)."""
    rate = float(s)
    if not 0.0 <= rate < 1.0:
        raise ValueError(s)
    return rate


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
            return Layer(kind, [rate_arg(args[0])], at)
        if kind == "layernorm":
            eps = float(args[0]) if args else LN_EPSILON
            if not 0.0 < eps < 1.0:
                raise ValueError(args[0])
            return Layer(kind, [f32(eps)], at)
        if kind == "attention":  # HEADS[:causal][:DROPOUT]
            heads, causal, rate = int_arg(args[0], HEADS_MAX), False, 0.0
            for i, a in enumerate(args[1:], 1):
                if a == "causal" and i == 1:
                    causal = True
                elif i == len(args) - 1:
                    rate = rate_arg(a)
                else:
                    raise ValueError(a)
            return Layer(kind, [heads, causal, rate], at)
        if kind == "embedding":
            return Layer(kind, [int_arg(args[0], UNITS_MAX)], at)
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


def layer_shape(l, i, ins, in_seq, classes):
    """Layer l's output shape and whether it is a sequence."""
    h, w, c = ins[0]

    def fail(why):
        raise RebuildError("layer %d (%s): %s" % (i + 1, l.kind, why))
    if l.kind in ("conv2d", "maxpool2d", "avgpool2d", "tokens") and in_seq:
        fail("takes an image, but its input is a sequence")
    if l.kind in ("attention", "posembed", "unembed") and not in_seq:
        fail("takes a sequence of tokens, but its input is %s" % (ins[0],))
    if l.kind == "add":
        if ins[0] != ins[1]:
            fail("an add of %s and %s" % (ins[0], ins[1]))
        return ins[0], in_seq
    if l.kind == "dense":
        return (1, w, l.args[0] or classes) if in_seq else (1, 1, l.args[0] or classes), in_seq
    if l.kind == "conv2d":
        f, k, s, pad = l.args
        oh, ow = window(h, w, k, s, pad == "same")[:2]
        return (oh, ow, f), False
    if l.kind in ("maxpool2d", "avgpool2d"):
        oh, ow = window(h, w, l.args[0], l.args[1], False)[:2]
        return (oh, ow, c), False
    if l.kind == "globalavgpool":
        return (1, 1, c), False
    if l.kind == "flatten":
        return (1, 1, h * w * c), False
    if l.kind == "tokens":
        if h * w == 1:
            fail("makes tokens of an image, but its input is a flat row")
        return (1, h * w, c), True
    if l.kind == "attention" and c % l.args[0]:
        fail("its width %d is not a multiple of its %d heads" % (c, l.args[0]))
    if l.kind == "embedding":  # a flat row of T token ids: T vectors
        if h * w != 1 or in_seq:
            fail("takes a flat row of token ids, but its input is %s" % (ins[0],))
        return (1, c, l.args[0]), True
    if l.kind == "unembed":  # each token's logits against the embedding's table
        return (1, w, l.vocab), True
    return (h, w, c), in_seq  # dropout, norms, activations, attention, posembed


def layer_vars(l, ins):
    """{name: (shape, trainable)} of layer l (named), input shape ins[0]."""
    h, w, c = ins[0]
    n = l.name
    if l.kind == "dense":
        fan_in = c if l.seq else h * w * c
        return {n + "/kernel": ((fan_in, l.shape[2]), True), n + "/bias": ((l.shape[2],), True)}
    if l.kind == "conv2d":
        return {n + "/kernel": ((l.args[1], l.args[1], c, l.args[0]), True),
                n + "/bias": ((l.args[0],), True)}
    if l.kind == "layernorm":
        return {n + "/gamma": ((c,), True), n + "/beta": ((c,), True)}
    if l.kind == "posembed":
        return {n + "/embeddings": ((w, c), True)}
    if l.kind == "embedding":  # the vocabulary is the data's: its classes
        return {n + "/embeddings": ((l.vocab, l.args[0]), True)}
    if l.kind == "attention":
        heads = l.args[0]
        key = c // heads
        need = {}
        for part in ("query", "key", "value"):
            need["%s/%s/kernel" % (n, part)] = ((c, heads, key), True)
            need["%s/%s/bias" % (n, part)] = ((heads, key), True)
        need[n + "/attention_output/kernel"] = ((heads, key, c), True)
        need[n + "/attention_output/bias"] = ((c,), True)
        return need
    return {"%s/%s" % (n, v): ((c,), trainable)  # batchnorm
            for v, trainable in (("gamma", True), ("beta", True),
                                 ("moving_mean", False), ("moving_variance", False))}


def plan(layers, in_shape, classes, vocab=0):
    """Each layer's output shape and Keras name; the variables the model
    needs: {name: (shape, trainable)}. vocab: rows of token ids in [0,
    vocab) (a language model: the last layer may give classes values for
    each of the sequence's tokens), else 0."""
    need, counts = {}, {}
    for i, l in enumerate(layers):
        l.vocab = vocab
        ins = [in_shape if s < 0 else layers[s].shape for s in l.src]
        in_seq = l.src[0] >= 0 and layers[l.src[0]].seq
        l.shape, l.seq = layer_shape(l, i, ins, in_seq, classes)
        keras = KERAS.get(l.kind)
        if keras:
            n = counts.get(keras, 0)
            counts[keras] = n + 1
            l.name = keras if n == 0 else "%s_%d" % (keras, n)
            need.update(layer_vars(l, ins))
        if l.kind == "unembed":  # tied: the first embedding's table, no variable of its own
            table = [e for e in layers[:i] if e.kind == "embedding"]
            if not table or table[0].args[0] != ins[0][2]:
                raise RebuildError("layer %d (unembed): no embedding of width %d before it"
                                   % (i + 1, ins[0][2]))
            l.name = table[0].name
    last = layers[-1]
    if vocab and last.seq and last.shape[2] == classes:
        return need  # every token's next one
    if last.shape != (1, 1, classes) or last.seq:
        raise RebuildError("the last layer gives %s, not %d classes" % (layers[-1].shape, classes))
    return need
