#!/usr/bin/env python3
"""PyTorch peer of mtrain's ResNet-20 preset (jobs/fmnist-resnet.conf): the
same model, recipe and epochs on Fashion-MNIST, for setting its test accuracy
(raw and EMA) side by side with mtrain's.

usage: bench/resnet_torch.py [--conf jobs/fmnist-resnet.conf] [--epochs N]
                            [--threads 2] [--seed 42] [--ranks 1] [--steps N]
  --epochs: default the preset's (epochs = 30)
  --ranks R: batch norm as mtrain's with R ranks (no --sync-bn): each slice
       [r*B/R, (r+1)*B/R) of the global batch normalised with its own
       statistics, the moving statistics following the mean of the slices'
       (mtrain averages each rank's at evaluation); 1: the whole batch's
  --steps N: stop after N steps (smoke tests); the schedule still spans the
       epochs' steps
Read from the preset (key = value; flags win): epochs, batch, lr, momentum,
nesterov, weight-decay, schedule (cosine or constant), lr-min, warmup,
augment, seed, ema-decay, ema-num-updates; optimizer must be momentum,
input-shape 28,28,1, and model the ResNet-20 below (else one line, exit 2).

Model, ResNet-20 v1 as the preset's model lines write it, NCHW here:
  conv2d:16:3, batchnorm, relu
  3 x [conv 16 3x3, bn, relu, conv 16 3x3, bn] + x, relu          28x28x16
  [conv 32 3x3/2, bn, relu, conv 32 3x3, bn | conv 32 1x1/2, bn], relu,
  2 x [conv 32 3x3, bn, relu, conv 32 3x3, bn] + x, relu          14x14x32
  the same with 64 filters                                           7x7x64
  globalavgpool, dense 10
  conv2d: Keras' Conv2D with a bias, padding 'same' by TF's rule (mtrain's
  src/layers.c set_window): total pad max((out-1)*s + k - in, 0), pad/2
  before, the rest after (3x3 stride 2 on 28x28: 0 top/left, 1
  bottom/right); batchnorm: Keras' (epsilon 1e-3, momentum 0.99, i.e.
  PyTorch's 0.01; moving variance Bessel-corrected in both); kernels
  Glorot-uniform over fan_in = kh*kw*in, fan_out = kh*kw*out, zero biases,
  gamma 1, beta 0.
  272,970 trainable values (kernels, biases, gamma, beta) and 1,568 moving
  statistics: printed and checked at start, with each stage's output shape.
Recipe, as mtrain's: SGD momentum 0.9 Nesterov (buf = mu*buf + g + wd*w;
w -= lr*(g + wd*w + mu*buf): PyTorch's SGD is that formula), L2 weight
decay 5e-4 on every trainable value, lr at update s (from 0) lr_min +
(lr - lr_min)/2 * (1 + cos(pi*s/total)) over total = epochs * (60000 // 128)
steps (update 0 at the peak), global batch 128 of each epoch's fresh random
permutation, the last partial batch dropped, mean softmax cross-entropy.
Augmentation per training row, in the preset's order: crop:P (zero-pad P
pixels each side, a random window, offsets uniform in 0..2P), flip (mirror
left-right with probability 1/2); evaluation rows never.
EMA after each update s (from 1): shadow -= (1 - d) * (shadow - w) over the
trainable values, d = min(0.999, (1 + s) / (10 + s)), shadows starting at
the initial weights; evaluated with the raw model's moving statistics.
Data: /usr/share/datasets/fashion-mnist/*-ubyte.gz (Debian's
dataset-fashion-mnist), pixels byte / 255 as mtrain's dataset_scale_u8.
The thread pools (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS) are
sized before torch loads, then torch.set_num_threads.
Prints progress every 50 steps, after each epoch (and at the last step) the
10,000 test rows' evaluation as mtrain's eval line
  eval step 468 epoch 1 raw_loss 0.3456 raw_acc 0.8765 ema_loss 0.4567 ema_acc 0.8543
and at the end
  torch resnet20 epochs 30 threads 2 raw_acc 0.9400 ema_acc 0.9410 minutes 50.3
Exit 1 when a loss is not finite, 2 on a bad option or preset.
"""
import argparse
import os
import sys

# The preset's model, whitespace removed: the architecture built below.
RESNET20 = ("conv2d:16:3,batchnorm,relu,"
            "3*([conv2d:16:3,batchnorm,relu,conv2d:16:3,batchnorm],relu),"
            "[conv2d:32:3:2,batchnorm,relu,conv2d:32:3,batchnorm|conv2d:32:1:2,batchnorm],relu,"
            "2*([conv2d:32:3,batchnorm,relu,conv2d:32:3,batchnorm],relu),"
            "[conv2d:64:3:2,batchnorm,relu,conv2d:64:3,batchnorm|conv2d:64:1:2,batchnorm],relu,"
            "2*([conv2d:64:3,batchnorm,relu,conv2d:64:3,batchnorm],relu),"
            "globalavgpool,dense")
EXPECT_TRAINABLE = 272970
EXPECT_MOVING = 1568
EXPECT_STAGES = [(28, 28, 16), (14, 14, 32), (7, 7, 64)]  # H, W, C


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conf", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "..", "jobs", "fmnist-resnet.conf"))
    ap.add_argument("--epochs", type=int, default=None, help="default: the preset's")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=None, help="default: the preset's, else 42")
    ap.add_argument("--ranks", type=int, default=1,
                    help="batch-norm statistics per 1/R of the batch, as mtrain on R ranks")
    ap.add_argument("--steps", type=int, default=0, help="stop after N steps (smoke tests)")
    a = ap.parse_args()
    if a.threads < 1 or a.ranks < 1 or a.steps < 0 or (a.epochs is not None and a.epochs < 1):
        ap.error("--threads, --ranks and --epochs must be at least 1, --steps at least 0")
    return a


if __name__ == "__main__":
    ARGS = parse_args()
    # Sized before torch loads, as bench/bench_torch.py does.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)

import torch  # noqa: E402  (after the thread pools' variables)
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import peer_common  # noqa: E402
from peer_common import fail  # noqa: E402


def recipe(conf, args, path):
    """The run's settings from the preset, flags winning."""
    if peer_common.conf_model(conf) != RESNET20:
        fail(f"{path}: model is not the ResNet-20 this script builds (RESNET20 in {__file__})")
    r = peer_common.common_recipe(conf, args, path, ("momentum",))
    r.update(momentum=peer_common.conf_num(conf, path, "momentum", 0.9),
             nesterov=peer_common.conf_onoff(conf, path, "nesterov", "off"))
    if r["batch"] < args.ranks:
        fail(f"--ranks {args.ranks}: more than the batch's {r['batch']} rows")
    return r


def tf_same_pad(size, k, s):
    """TF's 'same' padding of one axis: (before, after)."""
    out = (size + s - 1) // s
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


class Conv(nn.Conv2d):
    """Keras' Conv2D with a bias, 'same' padding by TF's rule."""

    def __init__(self, cin, cout, k, stride=1):
        super().__init__(cin, cout, k, stride=stride, padding=0, bias=True)

    def forward(self, x):
        k, s = self.kernel_size[0], self.stride[0]
        top, bottom = tf_same_pad(x.shape[2], k, s)
        left, right = tf_same_pad(x.shape[3], k, s)
        if top == bottom and left == right:
            return F.conv2d(x, self.weight, self.bias, self.stride, (top, left))
        return F.conv2d(F.pad(x, (left, right, top, bottom)), self.weight, self.bias, self.stride)


class BatchNorm(nn.BatchNorm2d):
    """Keras' BatchNormalization (epsilon 1e-3, momentum 0.99); with ranks > 1
    each slice of the batch as mtrain splits it over ranks is normalised with
    its own statistics, and the moving statistics follow their mean (each
    rank's moving average, averaged: the same, the update being linear)."""

    def __init__(self, c, ranks):
        super().__init__(c, eps=1e-3, momentum=0.01)
        self.ranks = ranks

    def forward(self, x):
        if not self.training or self.ranks == 1:
            return super().forward(x)
        n = x.shape[0]
        bounds = [n * r // self.ranks for r in range(self.ranks + 1)]
        outs, means, variances = [], [], []
        for lo, hi in zip(bounds, bounds[1:]):
            mean, var = self.running_mean.clone(), self.running_var.clone()
            outs.append(F.batch_norm(x[lo:hi], mean, var, self.weight, self.bias, True,
                                     self.momentum, self.eps))
            means.append(mean)
            variances.append(var)
        with torch.no_grad():
            self.running_mean.copy_(torch.stack(means).mean(0))
            self.running_var.copy_(torch.stack(variances).mean(0))
        return torch.cat(outs)


class Block(nn.Module):
    """[conv, bn, relu, conv, bn] + x, or with a projection shortcut
    [... | conv 1x1/stride, bn]; then relu."""

    def __init__(self, cin, cout, stride, ranks):
        super().__init__()
        self.main = nn.Sequential(Conv(cin, cout, 3, stride), BatchNorm(cout, ranks), nn.ReLU(),
                                  Conv(cout, cout, 3), BatchNorm(cout, ranks))
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(Conv(cin, cout, 1, stride), BatchNorm(cout, ranks))

    def forward(self, x):
        return F.relu(self.main(x) + (x if self.shortcut is None else self.shortcut(x)))


class ResNet20(nn.Module):
    def __init__(self, ranks, classes=10):
        super().__init__()
        self.stem = nn.Sequential(Conv(1, 16, 3), BatchNorm(16, ranks), nn.ReLU())
        stages, cin = [], 16
        for cout, stride in ((16, 1), (32, 2), (64, 2)):
            stages.append(nn.Sequential(Block(cin, cout, stride, ranks),
                                        Block(cout, cout, 1, ranks), Block(cout, cout, 1, ranks)))
            cin = cout
        self.stages = nn.ModuleList(stages)
        self.dense = nn.Linear(64, classes)

    def forward(self, x, shapes=None):
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
            if shapes is not None:
                shapes.append((x.shape[2], x.shape[3], x.shape[1]))
        return self.dense(x.mean(dim=(2, 3)))


def keras_init(model):
    """Glorot-uniform kernels (fan_in = kh*kw*in, fan_out = kh*kw*out, as
    PyTorch's xavier_uniform_ counts them), zero biases, gamma 1, beta 0."""
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d):
            m.reset_parameters()


def check_model(model):
    """Prints and checks the parameter counts and each stage's output shape."""
    trainable = sum(p.numel() for p in model.parameters())
    moving = sum(b.numel() for n, b in model.named_buffers() if n.endswith(("running_mean",
                                                                            "running_var")))
    shapes = []
    model.eval()
    with torch.no_grad():
        model(torch.zeros(1, 1, 28, 28), shapes)
    model.train()
    text = " ".join("x".join(map(str, s)) for s in shapes)
    print(f"model resnet20 trainable {trainable} moving_stats {moving} stages {text}", flush=True)
    if trainable != EXPECT_TRAINABLE or moving != EXPECT_MOVING or shapes != EXPECT_STAGES:
        fail(f"model check failed: expected trainable {EXPECT_TRAINABLE} moving_stats "
             f"{EXPECT_MOVING} stages 28x28x16 14x14x32 7x7x64", 1)


def train(args, r):
    def build():
        model = ResNet20(args.ranks)
        keras_init(model)
        check_model(model)
        opt = torch.optim.SGD(model.parameters(), lr=r["lr"], momentum=r["momentum"],
                              nesterov=r["nesterov"], weight_decay=r["weight_decay"])
        return model, ResNet20(args.ranks), opt

    return peer_common.train(args, r, "resnet20", build, (
        f"ranks {args.ranks} ",
        f"momentum {r['momentum']} nesterov {int(r['nesterov'])} weight_decay {r['weight_decay']}"))


def main():
    args = ARGS
    r = recipe(peer_common.read_conf(args.conf), args, args.conf)
    return train(args, r)


if __name__ == "__main__":
    sys.exit(main())
