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

The model and its variables come from the checkpoint by name
(mtrain_torch.py, over mtrain_spec.py's reading of the stored
configuration); a dataset left over or missing, or a shape that is not the
model's, is an error naming them all (exit status 1).

Written for torch 1.13 (Debian's python3-torch) and later: nothing of 2.x.
"""
import sys

import numpy as np
import torch
import torch.nn.functional as F

from mtrain_torch import SHADOW, RebuildError, forward, load, rows, to_torch


class Weights:
    """The values the forward pass asks for by name, recording each name
    asked for."""

    def __init__(self, values, trainable, ema, used):
        self.values, self.trainable, self.ema, self.used = values, trainable, ema, used

    def __call__(self, name):
        stored = name + "/" + SHADOW if self.ema and name in self.trainable else name
        self.used.add(stored)
        return torch.from_numpy(np.ascontiguousarray(self.values[stored], dtype=np.float32))


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
    m = load(ckpt)
    x, labels, in_shape = rows(eval_path, m)

    torch.set_num_threads(1)
    xt, yt = to_torch(x, in_shape), torch.from_numpy(labels)
    used = set()
    raw = evaluate(m.layers, xt, yt, Weights(m.values, m.trainable, False, used))
    ema = evaluate(m.layers, xt, yt, Weights(m.values, m.trainable, True, used))
    # Every variable and shadow went into the figures (slots and
    # global_step are the optimizer's, not the model's).
    left = sorted(set(m.values) - used - set(m.slots) - {"global_step"})
    if left:
        raise RebuildError("%s: never used: %s" % (ckpt, " ".join(left)))

    print("%s: %d layers, %d variables (%d trainable, %d shadows, %d moving statistics, "
          "%d optimizer slots, global_step %s), %d rows of %s" %
          (ckpt, len(m.layers), len(m.values), len(m.trainable), len(m.trainable),
           len(m.need) - len(m.trainable), len(m.slots), m.global_step, len(labels),
           "x".join(map(str, in_shape))), file=sys.stderr)
    print("raw_loss %.9g raw_acc %.7g ema_loss %.9g ema_acc %.7g" % (raw + ema))


if __name__ == "__main__":
    try:
        main(sys.argv)
    except RebuildError as e:
        print("torch_rebuild: %s" % e, file=sys.stderr)
        sys.exit(1)
