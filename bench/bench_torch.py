#!/usr/bin/env python3
"""PyTorch peer of mtrain's benchmark: the same model and training step on the
CPU, its steady-state samples/s with 1 and with 2 intra-op threads, printed
one line per thread count for bench/bench.sh to set mtrain against.

usage: bench/bench_torch.py cnn|mlp|resnet|vit [--batchnorm] [--threads 1,2] [--batch 128]
                           [--steps N] [--repeats R] [--warmup W]
                           [--attention matmul|sdpa] [--precision fp32|bf16]
  cnn: conv 32 3x3 same, relu, maxpool 2, conv 64 3x3 same, relu, maxpool 2,
       flatten, dense 128, relu, dropout 0.3, dense 10  (input 1x28x28);
       --batchnorm: batch norm after each conv (conv, batchnorm, relu, as
       mtrain's "conv2d:32:3,batchnorm,relu,...")
  mlp: 784-256-256-10 relu
  resnet: jobs/fmnist-resnet.conf's ResNet-20 (bench/resnet_torch.py's model:
       TF padding, Keras batch norm and initialisers)
  vit: jobs/fmnist-vit.conf's ViT (bench/vit_torch.py's model and Keras
       initialisers); --attention: its heads' products as three ops (matmul,
       the default: the faster here) or by scaled_dot_product_attention (sdpa)
--precision bf16: the forward and loss under torch.autocast("cpu",
bfloat16), PyTorch's mixed precision on the CPU (its products and
convolutions in bf16, weights and optimizer fp32), as mtrain's
--precision bf16.
Each step as mtrain's: forward, softmax cross-entropy (mean over the batch),
backward, Adam (lr 1e-3, Keras' epsilon 1e-7), then the EMA of the weights,
shadow -= (1 - d) * (shadow - w) with d = min(0.999, (1 + step) / (10 + step)).
Data: synthetic Fashion-MNIST-shaped rows (pixels uniform in [0, 1), labels
uniform in 0..9), a fixed pool of batches cycled through, in memory.
Each thread count runs in a process of its own with OMP_NUM_THREADS and
OPENBLAS_NUM_THREADS set to it before torch loads: Debian's torch does its
dense layers in OpenBLAS (libblas.so.3), whose own thread pool
torch.set_num_threads does not reach. OPENBLAS_CORETYPE passes through.
Prints per thread count:
  torch model cnn threads 1 batch 128 samples_per_s 1234.5 min 1200.1 max 1250.3 step_ms 103.7 loss 2.30
(samples_per_s: median over repeats of steps*batch/time); exit 1 when a loss
is not finite or the EMA did not move.
"""
import argparse
import math
import os
import statistics
import subprocess
import sys
import time

import torch
from torch import nn

POOL_BATCHES = 8  # distinct synthetic batches cycled through


def build(kind, batchnorm, attention):
    """The model, initialised as Keras does."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if kind == "resnet":
        import resnet_torch  # the accuracy peer's model, one definition
        model = resnet_torch.ResNet20(ranks=1)
        resnet_torch.keras_init(model)
        return model
    if kind == "vit":
        import vit_torch
        model = vit_torch.ViT(attention)
        vit_torch.keras_init(model)
        return model
    if kind == "cnn":
        def bn(c):
            # Keras' BatchNormalization defaults: momentum 0.99, epsilon 1e-3.
            return [nn.BatchNorm2d(c, eps=1e-3, momentum=0.01)] if batchnorm else []
        model = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding="same"), *bn(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding="same"), *bn(64), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.3),
            nn.Linear(128, 10))
    else:
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                              nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    glorot(model)
    return model


def glorot(model):
    """Keras' initialisers, as mtrain's: Glorot-uniform kernels, zero biases."""
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)


def run(kind, batchnorm, attention, threads, batch, steps, repeats, warmup, bf16):
    """Samples/s of each repeat, the last loss, and whether the EMA moved."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = build(kind, batchnorm, attention)
    model.train()
    params = [p for p in model.parameters()]
    opt = torch.optim.Adam(params, lr=1e-3, eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()
    shadows = [p.detach().clone() for p in params]
    start = [s.clone() for s in shadows]
    xs = torch.rand(POOL_BATCHES, batch, 1, 28, 28)
    ys = torch.randint(0, 10, (POOL_BATCHES, batch))
    step = 0
    loss = None

    def train_step():
        nonlocal step, loss
        i = step % POOL_BATCHES
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(model(xs[i]), ys[i])
        loss.backward()
        opt.step()
        step += 1
        d = min(0.999, (1.0 + step) / (10.0 + step))
        with torch.no_grad():
            # shadow -= (1 - d) * (shadow - w)  ==  shadow = d * shadow + (1 - d) * w
            torch._foreach_mul_(shadows, d)
            torch._foreach_add_(shadows, [p.detach() for p in params], alpha=1.0 - d)

    for _ in range(warmup):
        train_step()
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            train_step()
        last = loss.item()  # waits for nothing on the CPU; reads the value
        rates.append(steps * batch / (time.perf_counter() - t0))
    moved = any(not torch.equal(s, s0) for s, s0 in zip(shadows, start))
    return rates, last, moved


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["cnn", "mlp", "resnet", "vit"])
    ap.add_argument("--batchnorm", action="store_true", help="cnn: batch norm after each conv")
    ap.add_argument("--threads", default="1,2", help="comma-separated, e.g. 1,2")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=None,
                    help="steps per repeat (default cnn, resnet and vit 20, mlp 200)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=None,
                    help="untimed steps first (default cnn, resnet and vit 5, mlp 50)")
    ap.add_argument("--attention", choices=["matmul", "sdpa"], default="matmul",
                    help="vit: the heads' products by scaled_dot_product_attention or three ops")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                    help="bf16: forward and loss under CPU autocast to bfloat16")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    thread_counts = [int(t) for t in a.threads.split(",")]
    if not a.child:
        # One process per thread count, its thread pools sized before torch loads.
        status = 0
        for threads in thread_counts:
            env = dict(os.environ, OMP_NUM_THREADS=str(threads),
                       OPENBLAS_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
            argv = [sys.executable, os.path.abspath(__file__), "--child", a.kind,
                    "--threads", str(threads), "--batch", str(a.batch),
                    "--repeats", str(a.repeats), "--precision", a.precision]
            if a.batchnorm:
                argv.append("--batchnorm")
            if a.kind == "vit":
                argv += ["--attention", a.attention]
            if a.steps:
                argv += ["--steps", str(a.steps)]
            if a.warmup is not None:
                argv += ["--warmup", str(a.warmup)]
            sys.stdout.flush()
            status |= subprocess.run(argv, env=env).returncode
        return 1 if status else 0
    steps = a.steps or (200 if a.kind == "mlp" else 20)
    warmup = a.warmup if a.warmup is not None else (50 if a.kind == "mlp" else 5)
    ok = True
    for threads in thread_counts:
        rates, loss, moved = run(a.kind, a.batchnorm, a.attention, threads, a.batch, steps,
                                 a.repeats, warmup, a.precision == "bf16")
        med = statistics.median(rates)
        name = a.kind + ("-bn" if a.batchnorm else "") + \
            ("-sdpa" if a.kind == "vit" and a.attention == "sdpa" else "") + \
            ("-bf16" if a.precision == "bf16" else "")
        print(f"torch model {name} threads {threads} batch {a.batch} samples_per_s {med:.1f} "
              f"min {min(rates):.1f} max {max(rates):.1f} step_ms {1e3 * a.batch / med:.3f} "
              f"loss {loss:.4f}", flush=True)
        if not math.isfinite(loss):
            print(f"bench_torch: {a.kind}, {threads} thread(s): loss {loss}", file=sys.stderr)
            ok = False
        if not moved:
            print(f"bench_torch: {a.kind}, {threads} thread(s): the EMA did not move",
                  file=sys.stderr)
            ok = False
    print(f"torch version {torch.__version__} check {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
