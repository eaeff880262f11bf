#!/usr/bin/env python3
"""The CNN of scripts/bench/cnn.lua (and examples/cnn.lua) in PyTorch, for a
side-by-side figure.

1×28×28 → conv 5×5, 32, ReLU → max 2×2 → conv 5×5, 64, ReLU → max 2×2 →
flatten 1024 → linear 128, ReLU → linear 10; softmax cross-entropy, SGD (lr
0.05, momentum 0.9), batch 128, the same IDX files (data/mnist by default).
The data set is held as one float tensor and batches are taken by index, as
vela does on its device, so the figure is the training step and not a
DataLoader. Prints one line per epoch and a last line with examples/s (wall
clock and per second of processor time), the test accuracy and the peak
resident memory (ru_maxrss, as vela's VmHWM).

    /usr/bin/python3 scripts/bench/cnn_torch.py [--epochs 3] [--dir data/mnist] [--threads N] [--train N]

--train N trains on the first N images only (cnn.lua's train=N passes it on).
--threads N gives torch N threads: OMP_NUM_THREADS before torch is imported
(its OpenMP pool is made at import, with a thread per core), then both of its
pools (intra-op and inter-op), so "1 thread" is one thread of work, as vela's
threads=1.
"""
import argparse
import os
import resource
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--dir", default="data/mnist")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--train", type=int, default=0)
    a = ap.parse_args()
    if a.threads:
        os.environ["OMP_NUM_THREADS"] = str(a.threads)
    import numpy as np
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from mnist_torch import fit, read_idx  # the MLP twin's IDX reader and training loop
    if a.threads:
        torch.set_num_threads(a.threads)
        torch.set_num_interop_threads(a.threads)
    torch.manual_seed(1)

    def load(prefix):
        x = read_idx(os.path.join(a.dir, f"{prefix}-images-idx3-ubyte"))
        y = read_idx(os.path.join(a.dir, f"{prefix}-labels-idx1-ubyte"))
        return (torch.from_numpy(x.reshape(len(x), 1, 28, 28).astype(np.float32) / 255),
                torch.from_numpy(y.astype(np.int64)))

    xtr, ytr = load("train")
    xte, yte = load("t10k")
    if a.train:
        xtr, ytr = xtr[:a.train], ytr[:a.train]
    nn = torch.nn
    net = nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 5), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1024, 128), nn.ReLU(), nn.Linear(128, 10))
    rates, cpu_rates, acc = fit(net, xtr, ytr, xte, yte, a.epochs, a.batch, eval_batch=1000)
    print(f"{max(rates):8.0f} ex/s ({max(cpu_rates):6.0f} per cpu-second)   test {100 * acc:.2f}% after {a.epochs} epochs"
          f"   peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
          f"   (torch {torch.__version__}, {torch.get_num_threads()} threads)")


if __name__ == "__main__":
    main()
