#!/usr/bin/env python3
"""PyTorch peer of mtrain's ViT preset (jobs/fmnist-vit.conf): the same
model, initialisers, recipe and epochs on Fashion-MNIST, for setting its test
accuracy (raw and EMA) side by side with mtrain's.

usage: bench/vit_torch.py [--conf jobs/fmnist-vit.conf] [--epochs N]
                         [--threads 2] [--seed 42] [--steps N]
                         [--attention sdpa|matmul]
  --epochs: default the preset's (epochs = 30)
  --steps N: stop after N steps (smoke tests); the schedule still spans the
       epochs' steps
  --attention: how the heads' products are computed, the same arithmetic
       either way: matmul (q k^T, softmax, p v as three ops; the default) or
       sdpa (torch.nn.functional.scaled_dot_product_attention). On the 2-core
       AMD EPYC of docs/speed.md with torch 2.15 (measured under load), the
       whole step at 2 threads took 10 to 30% less time with matmul (sdpa's
       products did not get faster with the second thread); at 1 thread the
       two were within the noise
Read from the preset (key = value; flags win): epochs, batch, optimizer
(adamw or adam), lr, beta1, beta2, eps, weight-decay, schedule (cosine or
constant), lr-min, warmup, augment, seed, ema-decay, ema-num-updates;
input-shape 28,28,1 when set, and model the ViT below (else one line, exit 2).

Model, as the preset's model line writes it (letters: T = 49 tokens, D = 64
wide, H = 4 heads of K = 16, U = 128 the MLP's width):
  conv2d:64:4:4:valid     4x4 patches, stride 4: 28x28x1 -> 7x7x64
  tokens                  [7, 7, 64] -> [T, D], row by row (channels last)
  posembed                + a learned [T, D]
  6 x ( [layernorm, attention:4] + x,  [layernorm, dense:U, gelu, dense:D] + x )
  layernorm, globalavgpool (the mean of the T tokens), dense 10
  layernorm: eps 1e-3 (as float32, as mtrain's), gamma 1, beta 0.
  attention: Keras' MultiHeadAttention(num_heads=4, key_dim=16) on itself:
  q, k, v = x Wq + bq, ... (kernels [D, H, K]), per head softmax(q_h k_h^T /
  sqrt(K)) v_h, the heads side by side, then the output kernel [H, K, D] and
  its bias (mtrain's src/layer_attn.c). Here q, k and v are one Linear of
  3D outputs (q's, k's, v's, each head by head, as [D, H, K] flattened).
  gelu: the exact (erf) form. dense acts on each token.
  Initialisers, Keras' as mtrain's layer_glorot: Glorot-uniform, limit
  sqrt(6 / (fan_in + fan_out)), by Keras' compute_fans (a 2-D kernel's rows
  and columns; beyond, the last two dimensions times the others'): conv2d
  [4,4,1,64] 16 and 1024; posembed [T, D] (keras_hub's PositionEmbedding)
  49 and 64; q, k, v [D,H,K] and output [H,K,D] as Keras' EinsumDense
  takes its fans, from the einsum's axes: D and D for each;
  dense [in, out] in and out; zero biases.
  205,834 trainable values: printed and checked at start, with the tokens'
  shape.
Recipe, as mtrain's: AdamW (PyTorch's form, which is mtrain's adam_step:
w -= lr*wd*w, then Adam with bias corrections, eps added to sqrt(v)/sqrt(bc2))
with weight decay on every trainable value; adam: L2 (wd*w added to the
gradient); lr at update s (from 0): lr*(s+1)/warmup while s < warmup, then
lr_min + (lr - lr_min)/2 * (1 + cos(pi*(s - warmup)/(total - warmup))) over
total = epochs * (60000 // batch) steps; global batch of each epoch's fresh
random permutation, the last partial batch dropped; mean softmax
cross-entropy. Augmentation per training row, in the preset's order: crop:P
(zero-pad P pixels each side, a random window), flip (mirror left-right with
probability 1/2); evaluation rows never. EMA after each update s (from 1):
shadow -= (1 - d) * (shadow - w), d = min(0.999, (1 + s) / (10 + s)), shadows
starting at the initial weights. Data and thread pools as
bench/resnet_torch.py's (bench/peer_common.py).
Prints progress every 50 steps, after each epoch (and at the last step) the
10,000 test rows' evaluation as mtrain's eval line
  eval step 468 epoch 1 raw_loss 0.3456 raw_acc 0.8765 ema_loss 0.4567 ema_acc 0.8543
and at the end
  torch vit epochs 30 threads 2 raw_acc 0.9100 ema_acc 0.9110 minutes 50.3
Exit 1 when a loss is not finite, 2 on a bad option or preset.
"""
import argparse
import math
import os
import sys

# The preset's model, whitespace removed: the architecture built below.
VIT = ("conv2d:64:4:4:valid,tokens,posembed,"
       "6*([layernorm,attention:4],[layernorm,dense:128,gelu,dense:64]),"
       "layernorm,globalavgpool,dense")
PATCH, WIDTH, HEADS, MLP, BLOCKS, CLASSES = 4, 64, 4, 128, 6, 10
TOKENS = (28 // PATCH) ** 2
EXPECT_TRAINABLE = 205834


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conf", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "..", "jobs", "fmnist-vit.conf"))
    ap.add_argument("--epochs", type=int, default=None, help="default: the preset's")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=None, help="default: the preset's, else 42")
    ap.add_argument("--steps", type=int, default=0, help="stop after N steps (smoke tests)")
    ap.add_argument("--attention", choices=["matmul", "sdpa"], default="matmul",
                    help="the heads' products: scaled_dot_product_attention or three ops")
    a = ap.parse_args()
    if a.threads < 1 or a.steps < 0 or (a.epochs is not None and a.epochs < 1):
        ap.error("--threads and --epochs must be at least 1, --steps at least 0")
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

import peer_common  # noqa: E402
from peer_common import fail  # noqa: E402

LN_EPS = float(np.float32(1e-3))  # mtrain's layernorm epsilon is a float32


def recipe(conf, args, path):
    """The run's settings from the preset, flags winning."""
    if peer_common.conf_model(conf) != VIT:
        fail(f"{path}: model is not the ViT this script builds (VIT in {__file__})")
    r = peer_common.common_recipe(conf, args, path, ("adamw", "adam"))
    r.update(beta1=peer_common.conf_num(conf, path, "beta1", 0.9),
             beta2=peer_common.conf_num(conf, path, "beta2", 0.999),
             eps=peer_common.conf_num(conf, path, "eps", 1e-8))
    return r


class Attention(nn.Module):
    """Keras' MultiHeadAttention(num_heads=heads, key_dim=d/heads) as
    self-attention of x [N, T, D], with biases."""

    def __init__(self, d, heads, sdpa):
        super().__init__()
        self.heads, self.key, self.sdpa = heads, d // heads, sdpa
        self.qkv = nn.Linear(d, 3 * d)  # weight [3D, D]: q's rows, k's, v's; head by head
        self.out = nn.Linear(d, d)      # weight [D, H*K]: Keras' [H, K, D] transposed

    def forward(self, x):
        n, t, d = x.shape
        # (3, N, H, T, K)
        q, k, v = self.qkv(x).view(n, t, 3, self.heads, self.key).permute(2, 0, 3, 1, 4)
        if self.sdpa:
            o = F.scaled_dot_product_attention(q, k, v)  # scale 1/sqrt(K)
        else:
            p = torch.softmax(q @ k.transpose(-2, -1) * (1.0 / math.sqrt(self.key)), dim=-1)
            o = p @ v
        return self.out(o.transpose(1, 2).reshape(n, t, d))  # heads side by side: [N, T, H*K]


class Block(nn.Module):
    """[layernorm, attention] + x, then [layernorm, dense, gelu, dense] + x."""

    def __init__(self, sdpa):
        super().__init__()
        self.ln1 = nn.LayerNorm(WIDTH, eps=LN_EPS)
        self.attn = Attention(WIDTH, HEADS, sdpa)
        self.ln2 = nn.LayerNorm(WIDTH, eps=LN_EPS)
        self.fc1 = nn.Linear(WIDTH, MLP)
        self.fc2 = nn.Linear(MLP, WIDTH)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class ViT(nn.Module):
    def __init__(self, attention="matmul"):
        super().__init__()
        self.patch = nn.Conv2d(1, WIDTH, PATCH, stride=PATCH)  # 'valid'
        self.pos = nn.Parameter(torch.zeros(TOKENS, WIDTH))
        self.blocks = nn.Sequential(*[Block(attention == "sdpa") for _ in range(BLOCKS)])
        self.ln = nn.LayerNorm(WIDTH, eps=LN_EPS)
        self.dense = nn.Linear(WIDTH, CLASSES)

    def forward(self, x, shapes=None):
        x = self.patch(x)                      # (N, D, 7, 7)
        x = x.flatten(2).transpose(1, 2)       # (N, T, D): pixel (i, j) is token 7i + j
        if shapes is not None:
            shapes.append(tuple(x.shape[1:]))
        x = self.blocks(x + self.pos)
        return self.dense(self.ln(x).mean(dim=1))


def glorot_(w, fan_in, fan_out):
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    nn.init.uniform_(w, -limit, limit)


def keras_init(model):
    """Keras' initialisers by Keras' fans (mtrain's layer_glorot), zero
    biases, layer norm's gamma 1 and beta 0."""
    d, h = WIDTH, HEADS
    k = d // h
    glorot_(model.patch.weight, PATCH * PATCH * 1, PATCH * PATCH * WIDTH)  # [4, 4, 1, D]
    glorot_(model.pos, TOKENS, WIDTH)
    attention_parts = set()
    for m in model.modules():  # an Attention comes before its Linears
        if isinstance(m, Attention):
            for part in m.qkv.weight.split(d):
                glorot_(part, d, h * k)             # [D, H, K]: EinsumDense's fans
            glorot_(m.out.weight, h * k, d)         # [H, K, D]
            attention_parts |= {m.qkv, m.out}
        elif isinstance(m, nn.Linear) and m not in attention_parts:
            glorot_(m.weight, m.in_features, m.out_features)
        elif isinstance(m, nn.LayerNorm):
            m.reset_parameters()
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.zeros_(m.bias)


def check_model(model):
    """Prints and checks the parameter count and the tokens' shape."""
    trainable = sum(p.numel() for p in model.parameters())
    shapes = []
    model.eval()
    with torch.no_grad():
        model(torch.zeros(1, 1, 28, 28), shapes)
    model.train()
    attention = "sdpa" if model.blocks[0].attn.sdpa else "matmul"
    print(f"model vit trainable {trainable} tokens {'x'.join(map(str, shapes[0]))} "
          f"attention {attention}", flush=True)
    if trainable != EXPECT_TRAINABLE or shapes != [(TOKENS, WIDTH)]:
        fail(f"model check failed: expected trainable {EXPECT_TRAINABLE} tokens "
             f"{TOKENS}x{WIDTH}", 1)


def train(args, r):
    def build():
        model = ViT(args.attention)
        keras_init(model)
        check_model(model)
        kind = torch.optim.AdamW if r["optimizer"] == "adamw" else torch.optim.Adam
        opt = kind(model.parameters(), lr=r["lr"], betas=(r["beta1"], r["beta2"]), eps=r["eps"],
                   weight_decay=r["weight_decay"])
        return model, ViT(args.attention), opt

    return peer_common.train(args, r, "vit", build, (
        f"attention {args.attention} ",
        f"warmup {r['warmup']} lr_min {r['lr_min']} optimizer {r['optimizer']} betas "
        f"{r['beta1']},{r['beta2']} eps {r['eps']} weight_decay {r['weight_decay']}"))


def main():
    args = ARGS
    r = recipe(peer_common.read_conf(args.conf), args, args.conf)
    return train(args, r)


if __name__ == "__main__":
    sys.exit(main())
