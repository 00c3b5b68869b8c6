#!/usr/bin/env python3
"""mtrain checked against PyTorch, as llm.c's test_gpt2 checks itself: the
same model built in PyTorch from an mtrain checkpoint by name
(mtrain_torch.py), on the same rows.

    torch_reference.py grads CKPT DATA DUMP.h5
        DUMP.h5 is tests/tools/grad_dump's for CKPT and rows of DATA: the
        logits and the mean loss of those rows, and every trainable
        variable's gradient of that loss, against PyTorch's.
    torch_reference.py steps CKPT DATA ROWS METRICS FINAL
        mtrain trained on one rank from CKPT's weights (--init-from CKPT),
        taking the rows of ROWS (its MTRAIN_TEST_ROWS record, rank 0's) at
        each step, and wrote the losses of METRICS ('train' events, every
        step) and the checkpoint FINAL, whose configuration gives the
        optimizer's hyper-parameters (AdamW only, a constant learning rate,
        --clip-norm by torch.nn.utils.clip_grad_norm_): torch.optim.AdamW
        takes the same steps from CKPT, and each step's loss is compared.

DATA may be a file of tokens: its rows are then windows (grad_dump's ROW w
begins at token w * T; a step record's ids are the windows' first tokens,
which are their places in a file whose tokens count up), and the loss is
the mean over every window's T next-token targets.

Each prints its figures, the largest relative differences, one line each,
and exits 1 when one is over its bound (--rtol-logits, --rtol-loss,
--rtol-grad, --rtol-steps: 1e-5, 1e-5, 1e-4, 1e-4). A difference is
normwise: max |mtrain - torch| / max |torch| over a tensor's values (logits,
one variable's gradient), so a value near 0 is judged against its tensor's
scale, not its own. A gradient that is 0 but for rounding (attention's
key/bias: softmax ignores what adds the same to every score of a query) is
judged against its layer's largest gradient instead (--grad-floor, 1e-3 of
it), printed with the others.

PyTorch computes in float64 (--float32: float32), from the checkpoint's
float32 values and the data's float32 inputs: the reference is then exact
to far below mtrain's rounding, which alone makes the differences.
"""
import argparse
import json
import re
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F

from mtrain_spec import f32
from mtrain_torch import RebuildError, forward, is_tokens, load, rows, to_torch, token_windows

# base/kinds.h's OPTIM_KINDS: AdamW's defaults where the configuration
# says 'default'.
ADAMW_DEFAULTS = {"beta1": 0.9, "beta2": 0.999, "weight-decay": 0.01}


def rel(a, b):
    """max |a - b| / max |b| over the values of two arrays; 0 for 0 vs 0."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = np.abs(b).max()
    diff = np.abs(a - b).max()
    return diff / scale if scale else (np.inf if diff else 0.0)


def params_of(m, dtype):
    """{name: leaf tensor requiring its gradient} of m's trainable values."""
    return {n: torch.tensor(m.values[n], dtype=dtype, requires_grad=True)
            for n in sorted(m.trainable)}


class Batches:
    """The rows of a data file as the model takes them: batch(ids) gives
    (x tensor, labels tensor) of rows ids; of a file of tokens, the windows
    beginning at tokens ids (labels [N, T])."""

    def __init__(self, m, data, dtype):
        self.m, self.data, self.dtype = m, data, dtype
        self.tokens = is_tokens(data)
        if not self.tokens:
            x, labels, in_shape = rows(data, m)
            self.x, self.y = to_torch(x, in_shape, dtype), torch.from_numpy(labels)

    def batch(self, ids):
        if self.tokens:
            x, labels = token_windows(self.data, self.m, list(ids))
            return to_torch(x, (1, 1, x.shape[1]), self.dtype), torch.from_numpy(labels)
        idx = torch.tensor(list(ids))
        return self.x[idx], self.y[idx]


def setup(ckpt, data, dtype):
    """(model, its Batches of data, parameters)."""
    torch.set_num_threads(1)
    m = load(ckpt)
    b = Batches(m, data, dtype)
    if b.tokens:
        b.batch([0])  # plans the model on windows
    return m, b, params_of(m, dtype)


def loss_of(m, x, labels, p):
    """(logits [N, classes] or a language model's [N * T, classes], the
    mean cross-entropy over the rows, or over every token's target)."""
    logits = forward(m.layers, x, p.__getitem__, training=True).reshape(-1, m.classes)
    return logits, F.cross_entropy(logits, labels.reshape(-1))


def kind(name):
    """A variable's class: its name without the layer's counter
    (multi_head_attention_1/key/bias: multi_head_attention/key/bias)."""
    return re.sub(r"^([a-z0-9_]+?)_[0-9]+/", r"\1/", name)


def layer(name):
    """The layer a variable belongs to (multi_head_attention_1)."""
    return name.split("/")[0]


def grads(a):
    m, b, p = setup(a.ckpt, a.data, a.dtype)
    grads_m = {}

    def keep(name, obj):  # grads/NAME: the variable NAME's
        if isinstance(obj, h5py.Dataset):
            grads_m[name] = obj[()]
    with h5py.File(a.dump, "r") as f:
        ids = f["rows"][()]
        logits_m, loss_m = f["logits"][()], float(f["loss"][()])
        f["grads"].visititems(keep)
    if sorted(grads_m) != sorted(p):
        raise RebuildError("%s: gradients of %s, the model's trainable variables are %s" %
                           (a.dump, sorted(grads_m), sorted(p)))
    # A file of tokens' rows are grad_dump's windows at shift 0: w * T.
    starts = [int(i) * m.input_dim for i in ids] if b.tokens else [int(i) for i in ids]
    logits, loss = loss_of(m, *b.batch(starts), p)
    loss.backward()
    figures = [("logits", rel(logits_m, logits.detach().numpy()), a.rtol_logits, ""),
               ("loss", rel(loss_m, loss.item()), a.rtol_loss, "")]
    # Each layer's largest gradient: the floor of a gradient that is 0.
    top = {}
    for n, t in p.items():
        top[layer(n)] = max(top.get(layer(n), 0.0), float(t.grad.abs().max()))
    worst = {}
    for n, t in p.items():
        ref = t.grad.numpy()
        floor = a.grad_floor * top[layer(n)]
        scale = max(float(np.abs(ref).max()), floor)
        r = float(np.abs(grads_m[n] - ref).max()) / scale if scale else 0.0
        if r >= worst.get(kind(n), (-1.0,))[0]:
            worst[kind(n)] = (r, n, float(np.abs(ref).max()) < floor)
    for k in sorted(worst):
        r, n, floored = worst[k]
        figures.append(("grad " + k, r, a.rtol_grad,
                        " (%s%s)" % (n, ", at the floor: 0 but for rounding" if floored else "")))
    print("%s: %d rows (%s), loss mtrain %.9g torch %.9g" %
          (a.dump, len(ids), " ".join(map(str, ids[:8])) + (" ..." if len(ids) > 8 else ""),
           loss_m, loss.item()))
    return report(figures)


def hyper(final):
    """AdamW's hyper-parameters from checkpoint final's configuration, as
    mtrain holds them (float32)."""
    cfg = load(final).cfg
    if cfg.get("optimizer") != "adamw" or cfg.get("schedule") != "constant" or \
            int(cfg.get("warmup", "0")) != 0:
        raise RebuildError("%s: optimizer %s, schedule %s, warmup %s: only adamw at a "
                           "constant rate is rebuilt" % (final, cfg.get("optimizer"),
                                                          cfg.get("schedule"), cfg.get("warmup")))
    hp = {k: f32(ADAMW_DEFAULTS[k] if cfg[k] == "default" else cfg[k])
          for k in ("beta1", "beta2", "weight-decay")}
    hp.update(lr=f32(cfg["lr"]), eps=f32(cfg["eps"]), clip=f32(cfg.get("clip-norm", "0")),
              decay_on=cfg.get("weight-decay-on", "matrices"))
    return hp


def steps(a):
    m, b, p = setup(a.ckpt, a.data, a.dtype)
    hp = hyper(a.final)
    batches = []
    with open(a.rows) as f:
        for line in f:
            step, _, _, rank, *ids = map(int, line.split())
            if rank != 0 or step != len(batches) + 1 or min(ids) < 0:
                raise RebuildError("%s: line %r: want step %d of rank 0, every row known" %
                                   (a.rows, line.strip(), len(batches) + 1))
            batches.append(ids)
    with open(a.metrics) as f:
        losses = {e["step"]: e["loss"] for e in map(json.loads, f) if e["event"] == "train"}
    if sorted(losses) != list(range(1, len(batches) + 1)):
        raise RebuildError("%s: losses of steps %s; %s has %d steps" %
                           (a.metrics, sorted(losses), a.rows, len(batches)))
    # --weight-decay-on matrices: kernels and embeddings decay, the rest not
    # (nanoGPT's two parameter groups).
    def decays(n):
        return hp["decay_on"] == "all" or n.split("/")[-1] in ("kernel", "embeddings")
    groups = [{"params": [t for n, t in p.items() if decays(n) == d],
               "weight_decay": hp["weight-decay"] if d else 0.0} for d in (True, False)]
    opt = torch.optim.AdamW([g for g in groups if g["params"]], lr=hp["lr"],
                            betas=(hp["beta1"], hp["beta2"]), eps=hp["eps"])
    figures = []
    print("AdamW lr %.9g betas %.9g %.9g eps %.9g weight decay %.9g on %s%s, %d steps of %d rows" %
          (hp["lr"], hp["beta1"], hp["beta2"], hp["eps"], hp["weight-decay"], hp["decay_on"],
           ", gradients clipped at norm %.9g" % hp["clip"] if hp["clip"] > 0 else "",
           len(batches), len(batches[0])))
    clipped = 0
    for s, ids in enumerate(batches, 1):
        opt.zero_grad()
        loss = loss_of(m, *b.batch(ids), p)[1]
        loss.backward()
        if hp["clip"] > 0:  # PyTorch's own, as --clip-norm is documented
            clipped += float(torch.nn.utils.clip_grad_norm_(list(p.values()), hp["clip"])) > hp["clip"]
        opt.step()
        figures.append(("step %2d loss mtrain %.7g torch %.7g" % (s, losses[s], loss.item()),
                        rel(losses[s], loss.item()), a.rtol_steps, ""))
    if hp["clip"] > 0:
        print("clipped %d of %d steps" % (clipped, len(batches)))
    return report(figures)


def report(figures):
    """Prints each figure against its bound: 0 when all hold, else 1."""
    bad = 0
    for what, r, bound, note in figures:
        over = not r <= bound
        bad |= over
        print("%-50s max rel. difference %.2e%s%s" % (what, r, note,
                                                      "  OVER %.0e" % bound if over else ""))
    return 1 if bad else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    for what, args in (("grads", ("ckpt", "data", "dump")),
                       ("steps", ("ckpt", "data", "rows", "metrics", "final"))):
        p = sub.add_parser(what)
        for arg in args:
            p.add_argument(arg)
        p.add_argument("--float32", dest="dtype", action="store_const", const=torch.float32,
                       default=torch.float64)
        p.add_argument("--rtol-logits", type=float, default=1e-5)
        p.add_argument("--rtol-loss", type=float, default=1e-5)
        p.add_argument("--rtol-grad", type=float, default=1e-4)
        p.add_argument("--grad-floor", type=float, default=1e-3)
        p.add_argument("--rtol-steps", type=float, default=1e-4)
    a = ap.parse_args(argv[1:])
    return grads(a) if a.what == "grads" else steps(a)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except RebuildError as e:
        print("torch_reference: %s" % e, file=sys.stderr)
        sys.exit(1)
