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
import gzip
import math
import os
import sys
import time

FASHION_DIR = "/usr/share/datasets/fashion-mnist"
LOG_EVERY = 50
EVAL_BATCH = 1000
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
                                                   "fmnist-resnet.conf"))
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

import numpy as np  # noqa: E402  (after the thread pools' variables)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402


def fail(msg, status=2):
    print(f"resnet_torch: {msg}", file=sys.stderr)
    sys.exit(status)


def read_conf(path):
    """The preset's key = value pairs, as mtrain's config file reads them: a
    comment starts a line or follows a blank, '_' in a key is '-', and a
    value that ends in ',', '(', '[' or '|' goes on on the next line."""
    try:
        with open(path) as f:
            lines = f.read().split("\n")
    except OSError as e:
        fail(f"--conf {path}: cannot open: {e.strerror}")
    conf, last = {}, None
    for lineno, line in enumerate(lines, 1):
        for i, ch in enumerate(line):
            if ch == "#" and (i == 0 or line[i - 1].isspace()):
                line = line[:i]
                break
        if not line.strip():
            continue
        if last is not None and conf[last] and conf[last][-1] in ",([|":
            conf[last] += " " + line.strip()
            continue
        if "=" not in line:
            fail(f"{path}:{lineno}: expected 'key = value', got '{line.strip()}'")
        key, val = line.split("=", 1)
        key = key.strip().replace("_", "-")
        if key in conf:
            fail(f"{path}:{lineno}: '{key}' is already set")
        conf[key] = val.strip()
        last = key
    return conf


def recipe(conf, args, path):
    """The run's settings from the preset, flags winning."""
    def num(key, default, kind=float):
        try:
            return kind(conf.get(key, default))
        except ValueError:
            fail(f"{path}: {key} = {conf[key]}: not a number")

    def onoff(key, default):
        v = conf.get(key, default)
        if v not in ("on", "off"):
            fail(f"{path}: {key} = {v}: expected on or off")
        return v == "on"

    model = "".join(conf.get("model", "").split())
    if model != RESNET20:
        fail(f"{path}: model is not the ResNet-20 this script builds (RESNET20 in {__file__})")
    if "".join(conf.get("input-shape", "").split()) != "28,28,1":
        fail(f"{path}: input-shape = {conf.get('input-shape')}: expected 28,28,1")
    if conf.get("optimizer") != "momentum":
        fail(f"{path}: optimizer = {conf.get('optimizer')}: expected momentum")
    schedule = conf.get("schedule", "constant")
    if schedule not in ("cosine", "constant"):
        fail(f"{path}: schedule = {schedule}: only cosine and constant are mirrored")
    r = dict(epochs=args.epochs or num("epochs", 5, int), batch=num("batch", 128, int),
             lr=num("lr", 1e-3), momentum=num("momentum", 0.9),
             nesterov=onoff("nesterov", "off"), weight_decay=num("weight-decay", 0.0),
             schedule=schedule, lr_min=num("lr-min", 0.0), warmup=num("warmup", 0, int),
             seed=args.seed if args.seed is not None else num("seed", 42, int),
             ema_decay=num("ema-decay", 0.999), ema_num_updates=onoff("ema-num-updates", "on"),
             augment=parse_augment(conf.get("augment", ""), path))
    if r["batch"] < args.ranks:
        fail(f"--ranks {args.ranks}: more than the batch's {r['batch']} rows")
    return r


def parse_augment(text, path):
    """[("crop", pad) | ("flip", 0)], in the order written."""
    ops = []
    for word in filter(None, "".join(text.split()).split(",")):
        if word == "flip":
            ops.append(("flip", 0))
        elif word.startswith("crop:") and word[5:].isdigit() and int(word[5:]) >= 1:
            ops.append(("crop", int(word[5:])))
        else:
            fail(f"{path}: augment = {text}: unknown '{word}' (known: flip, crop:PAD)")
    return ops


def read_idx(path):
    """An IDX file (gz) as a numpy uint8 array of its dimensions."""
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        fail(f"{path}: {e}; install Debian's dataset-fashion-mnist")
    if len(raw) < 4 or raw[0] or raw[1] or raw[2] != 0x08:
        fail(f"{path}: not an IDX file of bytes")
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != math.prod(dims):
        fail(f"{path}: {data.size} values for dimensions {dims}")
    return data.reshape(dims)


def load_split(part):
    """x (N, 1, 28, 28) float32 scaled as mtrain's dataset_scale_u8, y (N,) int64."""
    img = read_idx(f"{FASHION_DIR}/{part}-images-idx3-ubyte.gz")
    lab = read_idx(f"{FASHION_DIR}/{part}-labels-idx1-ubyte.gz")
    if img.ndim != 3 or img.shape[0] != lab.shape[0]:
        fail(f"{part}: images {img.shape} and labels {lab.shape} do not match")
    x = img.astype(np.float32) * np.float32(1.0 / 255.0)
    return torch.from_numpy(x).unsqueeze(1).contiguous(), torch.from_numpy(lab.astype(np.int64))


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


def augment(x, ops, gen):
    """Each row of x (B, C, H, W) through ops in order (a new tensor)."""
    b, _, h, w = x.shape
    rows = torch.arange(b)[:, None, None]
    for kind, pad in ops:
        if kind == "crop":
            padded = F.pad(x, (pad, pad, pad, pad))
            dy = torch.randint(0, 2 * pad + 1, (b,), generator=gen)
            dx = torch.randint(0, 2 * pad + 1, (b,), generator=gen)
            iy = (dy[:, None] + torch.arange(h))[:, :, None]
            ix = (dx[:, None] + torch.arange(w))[:, None, :]
            # (B, H, W, C) gathered, back to (B, C, H, W)
            x = padded.permute(0, 2, 3, 1)[rows, iy, ix].permute(0, 3, 1, 2).contiguous()
        else:
            mirror = torch.randint(0, 2, (b,), generator=gen).bool()
            x = torch.where(mirror[:, None, None, None], x.flip(3), x)
    return x


def lr_at(r, step, total):
    """mtrain's optim_lr: the rate of update `step` (counted from 0)."""
    if step < r["warmup"]:
        return r["lr"] * (step + 1) / r["warmup"]
    after, span = step - r["warmup"], total - r["warmup"]
    if r["schedule"] == "constant" or span <= 0:
        return r["lr"]
    return r["lr_min"] + 0.5 * (r["lr"] - r["lr_min"]) * (1.0 + math.cos(math.pi * after / span))


def ema_decay_at(r, step):
    """mtrain's ema_decay_at after update `step` (counted from 1)."""
    if not r["ema_num_updates"]:
        return r["ema_decay"]
    return min(r["ema_decay"], (1.0 + step) / (10.0 + step))


def evaluate(model, x, y):
    """Mean loss and accuracy over (x, y), with the moving statistics."""
    model.eval()
    loss_sum, correct = 0.0, 0
    with torch.no_grad():
        for lo in range(0, x.shape[0], EVAL_BATCH):
            logits = model(x[lo:lo + EVAL_BATCH])
            yy = y[lo:lo + EVAL_BATCH]
            loss_sum += F.cross_entropy(logits, yy, reduction="sum").item()
            correct += (logits.argmax(1) == yy).sum().item()
    model.train()
    return loss_sum / x.shape[0], correct / x.shape[0]


def eval_line(model, ema_model, shadows, test, step, epoch):
    """mtrain's eval_report: raw weights, then the EMA shadows with the raw
    model's moving statistics."""
    raw_loss, raw_acc = evaluate(model, *test)
    with torch.no_grad():
        for p, s in zip(ema_model.parameters(), shadows):
            p.copy_(s)
        for b, raw in zip(ema_model.buffers(), model.buffers()):
            b.copy_(raw)
    ema_loss, ema_acc = evaluate(ema_model, *test)
    print(f"eval step {step} epoch {epoch} raw_loss {raw_loss:.4f} raw_acc {raw_acc:.4f} "
          f"ema_loss {ema_loss:.4f} ema_acc {ema_acc:.4f}", flush=True)
    if not (math.isfinite(raw_loss) and math.isfinite(ema_loss)):
        fail(f"step {step}: evaluation loss not finite (raw {raw_loss}, ema {ema_loss})", 1)
    return raw_acc, ema_acc


def train(args, r):
    torch.set_num_threads(args.threads)
    torch.manual_seed(r["seed"])
    gen = torch.Generator().manual_seed(r["seed"])  # data order and augmentation
    x_train, y_train = load_split("train")
    test = load_split("t10k")
    model = ResNet20(args.ranks)
    keras_init(model)
    check_model(model)
    ema_model = ResNet20(args.ranks)
    params = list(model.parameters())
    shadows = [p.detach().clone() for p in params]
    opt = torch.optim.SGD(params, lr=r["lr"], momentum=r["momentum"], nesterov=r["nesterov"],
                          weight_decay=r["weight_decay"])
    batch = r["batch"]
    per_epoch = x_train.shape[0] // batch
    total = r["epochs"] * per_epoch
    stop = min(total, args.steps) if args.steps else total
    print(f"torch {torch.__version__} threads {args.threads} seed {r['seed']} batch {batch} "
          f"ranks {args.ranks} steps {stop}/{total} ({per_epoch} an epoch) lr {r['lr']} "
          f"momentum {r['momentum']} nesterov {int(r['nesterov'])} weight_decay "
          f"{r['weight_decay']} schedule {r['schedule']} augment "
          f"{','.join(k if k == 'flip' else f'crop:{p}' for k, p in r['augment']) or 'none'}",
          flush=True)
    t0 = time.perf_counter()
    since, loss_sum, rows_sum = t0, 0.0, 0
    step, raw_acc, ema_acc = 0, float("nan"), float("nan")
    for epoch in range(r["epochs"]):
        order = torch.randperm(x_train.shape[0], generator=gen)
        for pos in range(per_epoch):
            idx = order[pos * batch:(pos + 1) * batch]
            xb = augment(x_train[idx], r["augment"], gen)
            lr = lr_at(r, step, total)
            for group in opt.param_groups:
                group["lr"] = lr
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(xb), y_train[idx])
            loss.backward()
            value = loss.item()
            if not math.isfinite(value):
                fail(f"step {step + 1}: loss {value}", 1)
            opt.step()
            step += 1
            d = ema_decay_at(r, step)
            with torch.no_grad():
                for s, p in zip(shadows, params):
                    s.sub_(s - p, alpha=1.0 - d)
            loss_sum += value * batch
            rows_sum += batch
            last = step == stop
            if step % LOG_EVERY == 0 or last:
                now = time.perf_counter()
                print(f"step {step}/{total} epoch {epoch + 1} loss {loss_sum / rows_sum:.4f} "
                      f"lr {lr:.3e} samples/s {rows_sum / (now - since):.0f}", flush=True)
                since, loss_sum, rows_sum = now, 0.0, 0
            if pos + 1 == per_epoch or last:
                t_eval = time.perf_counter()
                raw_acc, ema_acc = eval_line(model, ema_model, shadows, test, step, epoch + 1)
                since += time.perf_counter() - t_eval  # evaluation is not training speed
            if last:
                break
        if step == stop:
            break
    minutes = (time.perf_counter() - t0) / 60.0
    print(f"torch resnet20 epochs {r['epochs']} threads {args.threads} raw_acc {raw_acc:.4f} "
          f"ema_acc {ema_acc:.4f} minutes {minutes:.1f}", flush=True)
    return 0


def main():
    args = ARGS
    r = recipe(read_conf(args.conf), args, args.conf)
    return train(args, r)


if __name__ == "__main__":
    sys.exit(main())
