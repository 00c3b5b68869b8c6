"""What the PyTorch peers of mtrain's presets share (bench/resnet_torch.py,
bench/vit_torch.py): the preset file's reader and the recipe's common keys,
Fashion-MNIST as mtrain reads it, the augmentation, mtrain's learning-rate
schedule and EMA decay, the evaluation line and the training loop. Each peer
brings its model, its optimizer and its own options.

It loads torch: a peer sizes its thread pools (OMP_NUM_THREADS,
OPENBLAS_NUM_THREADS, MKL_NUM_THREADS) before importing it.
"""
import gzip
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

FASHION_DIR = "/usr/share/datasets/fashion-mnist"
LOG_EVERY = 50
EVAL_BATCH = 1000
PROG = os.path.splitext(os.path.basename(sys.argv[0]))[0]  # e.g. resnet_torch


def fail(msg, status=2):
    print(f"{PROG}: {msg}", file=sys.stderr)
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


def conf_model(conf):
    """The preset's model, whitespace removed."""
    return "".join(conf.get("model", "").split())


def conf_num(conf, path, key, default, kind=float):
    try:
        return kind(conf.get(key, default))
    except ValueError:
        fail(f"{path}: {key} = {conf[key]}: not a number")


def conf_onoff(conf, path, key, default):
    v = conf.get(key, default)
    if v not in ("on", "off"):
        fail(f"{path}: {key} = {v}: expected on or off")
    return v == "on"


def common_recipe(conf, args, path, optimizers):
    """The settings every peer reads from the preset, flags (args.epochs,
    args.seed) winning, with mtrain's defaults (src/config.c; weight decay
    0.01 for adamw, else 0); the optimizer (mtrain's default: adam) must be
    one of optimizers, and input-shape, when set, the data's 28,28,1."""
    if "".join(conf.get("input-shape", "28,28,1").split()) != "28,28,1":
        fail(f"{path}: input-shape = {conf.get('input-shape')}: expected 28,28,1")
    optimizer = conf.get("optimizer", "adam")
    if optimizer not in optimizers:
        fail(f"{path}: optimizer = {conf.get('optimizer')}: expected {' or '.join(optimizers)}")
    schedule = conf.get("schedule", "constant")
    if schedule not in ("cosine", "constant"):
        fail(f"{path}: schedule = {schedule}: only cosine and constant are mirrored")

    def num(key, default, kind=float):
        return conf_num(conf, path, key, default, kind)

    # The peers decay every parameter, as torch.optim does by default.
    decay = num("weight-decay", 0.01 if optimizer == "adamw" else 0.0)
    if decay and conf.get("weight-decay-on", "matrices") != "all":
        fail(f"{path}: weight-decay-on = {conf.get('weight-decay-on', 'matrices')} "
             f"(the default): only all is mirrored")
    return dict(epochs=args.epochs or num("epochs", 5, int), batch=num("batch", 128, int),
                optimizer=optimizer, lr=num("lr", 1e-3),
                weight_decay=num("weight-decay", 0.01 if optimizer == "adamw" else 0.0),
                schedule=schedule, lr_min=num("lr-min", 0.0), warmup=num("warmup", 0, int),
                seed=args.seed if args.seed is not None else num("seed", 42, int),
                ema_decay=num("ema-decay", 0.999),
                ema_num_updates=conf_onoff(conf, path, "ema-num-updates", "on"),
                augment=parse_augment(conf.get("augment", ""), path))


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


def augment_text(ops):
    return ",".join(k if k == "flip" else f"crop:{p}" for k, p in ops) or "none"


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
    """Mean loss and accuracy over (x, y), in evaluation mode (moving
    statistics, no dropout)."""
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
    model's buffers (batch norm's moving statistics)."""
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


def train(args, r, name, build, settings):
    """mtrain's training loop on Fashion-MNIST: global batch r["batch"] of
    each epoch's fresh permutation (the last partial batch dropped), the
    preset's augmentation, the rate of lr_at set before each update, mean
    softmax cross-entropy, the EMA after each update, the eval line after
    each epoch and at the last step (args.steps stops early), then the line
    `torch NAME epochs N threads T raw_acc A ema_acc E minutes M`.
    build() gives (model, ema_model, optimizer) once the seed is set;
    settings: the peer's words of the start line (after the batch's, before
    the steps'), and (after lr's, before the schedule's). Returns 0."""
    torch.set_num_threads(args.threads)
    torch.manual_seed(r["seed"])
    gen = torch.Generator().manual_seed(r["seed"])  # data order and augmentation
    x_train, y_train = load_split("train")
    test = load_split("t10k")
    model, ema_model, opt = build()
    params = list(model.parameters())
    shadows = [p.detach().clone() for p in params]
    batch = r["batch"]
    per_epoch = x_train.shape[0] // batch
    total = r["epochs"] * per_epoch
    stop = min(total, args.steps) if args.steps else total
    print(f"torch {torch.__version__} threads {args.threads} seed {r['seed']} batch {batch} "
          f"{settings[0]}steps {stop}/{total} ({per_epoch} an epoch) lr {r['lr']} "
          f"{settings[1]} schedule {r['schedule']} augment {augment_text(r['augment'])}",
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
    print(f"torch {name} epochs {r['epochs']} threads {args.threads} raw_acc {raw_acc:.4f} "
          f"ema_acc {ema_acc:.4f} minutes {minutes:.1f}", flush=True)
    return 0
