#!/usr/bin/env python3
"""The MLP of scripts/bench/mnist.lua in PyTorch, for a side-by-side figure.

784-256-10, ReLU, softmax cross-entropy, SGD (lr 0.05, momentum 0.9), batch
128, the same IDX files (data/mnist by default). The data set is held as one
float tensor and batches are taken by index, as vela does on its device, so
the figure is the training step and not a DataLoader. Prints one line per
epoch and a last line with examples/s (wall clock and per second of processor time) and the test accuracy.

    python3 scripts/bench/mnist_torch.py [--epochs 3] [--dir data/mnist] [--threads N]
"""
import argparse
import gzip
import os
import struct
import sys
import time

import numpy as np
import torch


def read_idx(path):
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    magic = struct.unpack(">I", raw[:4])[0]
    if magic >> 8 != 0x08:
        sys.exit(f"{path}: not an unsigned-byte IDX file (magic 0x{magic:08x})")
    nd = magic & 0xFF
    dims = struct.unpack(">" + "I" * nd, raw[4:4 + 4 * nd])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * nd)
    if data.size != int(np.prod(dims)):
        sys.exit(f"{path}: {data.size} bytes of data, the header declares {int(np.prod(dims))}")
    return data.reshape(dims)


def fit(net, xtr, ytr, xte, yte, epochs, batch, eval_batch=0):
    """SGD (lr 0.05, momentum 0.9) on softmax cross-entropy, batches taken by
    index from a random order each epoch; prints a line an epoch. Returns the
    epochs' examples/s (wall), examples per cpu-second and the last test
    accuracy (the test set in parts of eval_batch images, 0: at once)."""
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    lossfn = torch.nn.CrossEntropyLoss()
    n = len(xtr)
    step = eval_batch or len(xte)
    rates, cpu_rates = [], []
    for epoch in range(1, epochs + 1):
        perm = torch.randperm(n)
        t0, c0 = time.perf_counter(), time.process_time()
        total = 0.0
        for i in range(0, n, batch):
            idx = perm[i:i + batch]
            opt.zero_grad()
            loss = lossfn(net(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        dt = time.perf_counter() - t0
        rates.append(n / dt)
        cpu_rates.append(n / (time.process_time() - c0))
        with torch.no_grad():
            acc = sum((net(xte[i:i + step]).argmax(1) == yte[i:i + step]).sum().item()
                      for i in range(0, len(xte), step)) / len(xte)
        print(f"epoch {epoch}  loss {total / n:.4f}  test {100 * acc:.2f}%  {dt:.2f} s  {n / dt:.0f} ex/s", flush=True)
    return rates, cpu_rates, acc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--dir", default="data/mnist")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--batch", type=int, default=128)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(1)

    def load(prefix):
        x = read_idx(os.path.join(a.dir, f"{prefix}-images-idx3-ubyte"))
        y = read_idx(os.path.join(a.dir, f"{prefix}-labels-idx1-ubyte"))
        return torch.from_numpy(x.reshape(len(x), -1).astype(np.float32) / 255), torch.from_numpy(y.astype(np.int64))

    xtr, ytr = load("train")
    xte, yte = load("t10k")
    net = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    rates, cpu_rates, acc = fit(net, xtr, ytr, xte, yte, a.epochs, a.batch)
    print(f"{max(rates):8.0f} ex/s ({max(cpu_rates):6.0f} per cpu-second)   test {100 * acc:.2f}% after {a.epochs} epochs"
          f"   (torch {torch.__version__}, {torch.get_num_threads()} threads)")

if __name__ == "__main__":
    main()
