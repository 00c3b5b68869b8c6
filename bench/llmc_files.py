"""The files llm.c's CPU trainer (train_gpt2.c) reads, for a GPT of a
chosen shape on mtrain's tokens (bench/llmc_compare.sh): in --out,
gpt2_124M.bin (llm.c's checkpoint: a header of 256 int32, magic 20240326,
version 3, max T, V, layers, heads, width, padded V; then every tensor in
its order, random: weights N(0, 0.02), the projections into the residual
N(0, 0.02 / sqrt(2 L)), biases 0, layer norms' weights 1, as llm.c's
train_gpt2.py starts), dev/data/tinyshakespeare/tiny_shakespeare_{train,val}.bin
(token shards: 256 int32, magic 20240520, version 1, the count; then
uint16 tokens) from mtrain's file of tokens (--data), and
gpt2_tokenizer.bin (version 2: 256 one-byte tokens, the newline as its
end-of-text), so that its samples print as text.

usage: llmc_files.py --data F.h5 --out DIR --layers L --heads H --width C --context T
"""
import argparse
import os

import h5py
import numpy as np


def shard(path, tokens):
    head = np.zeros(256, dtype=np.int32)
    head[:3] = (20240520, 1, len(tokens))
    with open(path, "wb") as f:
        f.write(head.tobytes())
        f.write(np.asarray(tokens, dtype=np.uint16).tobytes())


def main():
    ap = argparse.ArgumentParser()
    for a in ("--data", "--out"):
        ap.add_argument(a, required=True)
    for a in ("--layers", "--heads", "--width", "--context"):
        ap.add_argument(a, type=int, required=True)
    a = ap.parse_args()
    with h5py.File(a.data, "r") as f:
        vocab = int(f.attrs["vocab_size"])
        train, val = f["tokens"][()], f["val_tokens"][()]
    L, C, T = a.layers, a.width, a.context
    Vp = (vocab + 127) // 128 * 128
    rng = np.random.default_rng(0)

    def normal(n, std=0.02):
        return rng.normal(0.0, std, n).astype(np.float32)
    zeros = lambda n: np.zeros(n, np.float32)  # noqa: E731
    ones = lambda n: np.ones(n, np.float32)  # noqa: E731
    proj = 0.02 / np.sqrt(2 * L)
    tensors = [normal(Vp * C), normal(T * C), ones(L * C), zeros(L * C),
               normal(L * 3 * C * C), zeros(L * 3 * C), normal(L * C * C, proj), zeros(L * C),
               ones(L * C), zeros(L * C), normal(L * 4 * C * C), zeros(L * 4 * C),
               normal(L * C * 4 * C, proj), zeros(L * C), ones(C), zeros(C)]
    tensors[0][vocab * C:] = 0.0  # the padded rows
    os.makedirs(os.path.join(a.out, "dev/data/tinyshakespeare"), exist_ok=True)
    head = np.zeros(256, dtype=np.int32)
    head[:8] = (20240326, 3, T, vocab, L, a.heads, C, Vp)
    with open(os.path.join(a.out, "gpt2_124M.bin"), "wb") as f:
        f.write(head.tobytes())
        for t in tensors:
            f.write(t.tobytes())
    shard(os.path.join(a.out, "dev/data/tinyshakespeare/tiny_shakespeare_train.bin"), train)
    shard(os.path.join(a.out, "dev/data/tinyshakespeare/tiny_shakespeare_val.bin"), val)
    head = np.zeros(256, dtype=np.uint32)
    head[:4] = (20240328, 2, 256, 10)
    with open(os.path.join(a.out, "gpt2_tokenizer.bin"), "wb") as f:
        f.write(head.tobytes())
        for b in range(256):
            f.write(bytes([1, b]))
    print("llm.c files in %s: L %d, heads %d, width %d, T %d, V %d (padded %d), %d parameters"
          % (a.out, L, a.heads, C, T, vocab, Vp, sum(len(t) for t in tensors)))


if __name__ == "__main__":
    main()
