"""nanoGPT as the peer of a text preset (bench/gpt_compare.sh): its own
train.py, model.py and configurator.py from a checkout of karpathy/nanoGPT
(--nanogpt DIR; never copied into this tree), run unchanged on the CPU with
the preset's shape and recipe and the very tokens mtrain read.

The preset (--conf) gives the shape and the recipe: the GPT's width, blocks
and heads (its --model, read by tests/tools/mtrain_spec.py), the dropout,
context, batch, steps, learning rate, warm-up, cosine floor, beta2, weight
decay and gradient clipping. The data file (--data: mtrain's file of
tokens, datasets "tokens" and "val_tokens") is written as nanoGPT's
train.bin and val.bin (uint16) and meta.pkl (the vocabulary) in a work
folder (--work), where train.py runs. nanoGPT's model has biases here
(bias=True), as mtrain's layers do, and ties its embeddings as mtrain's
unembed does; float32, no compile. Its seed is train.py's one call of
torch.manual_seed, given --seed instead of 1337.

Prints nanoGPT's own lines, then one line for the comparison:
  peer val_loss V tokens_per_s R threads N torch VERSION
where V is nanoGPT's last validation estimate (eval_iters=200 batches)
and R the batch's tokens over the mean time of its steps 1 to max_iters-1
(the first step and the last, which carry the evaluations, left out).
"""
import argparse
import io
import os
import pickle
import re
import runpy
import sys
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "tools"))
import mtrain_spec  # noqa: E402


def fail(msg):
    print("nanogpt_peer: " + msg, file=sys.stderr)
    sys.exit(2)


def shape_of(conf):
    """(n_layer, n_head, n_embd, dropout) of the preset's GPT."""
    layers = mtrain_spec.model_layers(conf)
    attn = [l for l in layers if l.kind == "attention"]
    embed = [l for l in layers if l.kind == "embedding"]
    if not attn or not embed or layers[-1].kind != "unembed":
        fail("--conf: not a GPT of embedding, attention blocks and unembed (nanoGPT ties "
             "its embeddings)")
    heads = {l.args[0] for l in attn}
    if len(heads) != 1:
        fail("--conf: its attention layers have several head counts")
    rates = [l.args[0] for l in layers if l.kind == "dropout"] + [l.args[2] for l in attn]
    return len(attn), heads.pop(), embed[0].args[0], max(rates + [0.0])


def write_data(path, out):
    import h5py
    import numpy as np
    os.makedirs(out, exist_ok=True)
    with h5py.File(path, "r") as f:
        vocab = int(f.attrs["vocab_size"])
        for name, file in (("tokens", "train.bin"), ("val_tokens", "val.bin")):
            np.asarray(f[name][()], dtype=np.uint16).tofile(os.path.join(out, file))
    with open(os.path.join(out, "meta.pkl"), "wb") as f:
        pickle.dump({"vocab_size": vocab}, f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nanogpt", required=True)
    ap.add_argument("--conf", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=0)
    a = ap.parse_args()
    for f in ("train.py", "model.py", "configurator.py"):
        if not os.path.exists(os.path.join(a.nanogpt, f)):
            fail("--nanogpt %s: no %s (a checkout of karpathy/nanoGPT)" % (a.nanogpt, f))
    with open(a.conf) as f:
        conf = mtrain_spec.parse_config(f.read())
    n_layer, n_head, n_embd, dropout = shape_of(conf)
    steps = a.steps or int(conf["steps"])
    args = {"device": "cpu", "compile": False, "dtype": "float32", "dataset": "mtrain",
            "out_dir": os.path.join(a.work, "out"), "eval_interval": steps, "eval_iters": 200,
            "log_interval": 1, "always_save_checkpoint": False, "bias": True,
            "n_layer": n_layer, "n_head": n_head, "n_embd": n_embd, "dropout": dropout,
            "block_size": int(conf["context"]), "batch_size": int(conf["batch"]),
            "gradient_accumulation_steps": 1, "max_iters": steps, "lr_decay_iters": steps,
            "learning_rate": float(conf["lr"]), "min_lr": float(conf.get("lr-min", 0)),
            "warmup_iters": int(conf.get("warmup", 0)), "beta2": float(conf.get("beta2", 0.999)),
            "weight_decay": float(conf.get("weight-decay", 0)),
            "grad_clip": float(conf.get("clip-norm", 0))}
    write_data(a.data, os.path.join(a.work, "data", "mtrain"))
    for f in ("train.py", "model.py", "configurator.py"):
        link = os.path.join(a.work, f)
        if not os.path.exists(link):
            os.symlink(os.path.abspath(os.path.join(a.nanogpt, f)), link)
    os.chdir(a.work)
    sys.path.insert(0, a.work)
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    import torch
    torch.set_num_threads(a.threads)
    seed, real_seed = a.seed, torch.manual_seed
    torch.manual_seed = lambda _s: real_seed(seed)
    sys.argv = ["train.py"] + ["--%s=%s" % (k, v) for k, v in args.items()]
    out = io.StringIO()
    with redirect_stdout(out):
        runpy.run_path("train.py", run_name="__main__")
    text = out.getvalue()
    print(text, end="")
    vals = re.findall(r"step \d+: train loss [0-9.]+, val loss ([0-9.]+)", text)
    times = {int(i): float(t) for i, t in re.findall(r"iter (\d+): loss [0-9.]+, time ([0-9.]+)ms",
                                                     text)}
    dts = [t for i, t in times.items() if 0 < i < steps]
    if not vals or not dts:
        fail("no validation or step lines in nanoGPT's output")
    rate = int(conf["batch"]) * int(conf["context"]) / (sum(dts) / len(dts) / 1000.0)
    print("peer val_loss %s tokens_per_s %.0f threads %d torch %s" %
          (vals[-1], rate, a.threads, torch.__version__))


if __name__ == "__main__":
    main()
