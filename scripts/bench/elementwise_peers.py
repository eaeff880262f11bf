#!/usr/bin/env python3
"""The peers of scripts/bench/elementwise.lua: NumPy and PyTorch on the same
kernels over 16M float32 in [-4, 4) (add's second operand in [0, 1)), one
line per (peer, threads, kernel): wall GB/s, the median of --reps calls after
one warm-up call, and GB per cpu-second (bytes read and written;
time.process_time, every thread of this process) over calls back to back for
--burst seconds after them (elementwise.lua says why not per call).
elementwise.lua spawns it; by hand:

    /usr/bin/python3 scripts/bench/elementwise_peers.py [--reps 7] [--burst 0.25] [--kernels add,tanh]

NumPy runs on one thread (it has no other); PyTorch on 1 and 2
(torch.set_num_threads; OMP_NUM_THREADS=2 before the import so its OpenMP pool
has two). Each kernel writes into a preallocated output where the library
lets it (out=); NumPy has no sigmoid or gelu, so those are the float32
expressions with in-place temporaries, the fastest NumPy form; PyTorch's gelu
is F.gelu(approximate='tanh'), vela's formula, which allocates its result.
Output lines: `peer threads kernel wall_GBs cpu_GBs`."""
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "2")
import numpy as np  # noqa: E402

N = 16 * 1024 * 1024
BYTES = {"add": 12 * N}  # the others read one operand and write one: 8N


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def bench(f, reps, burst):
    """(median wall seconds of a call, processor seconds per call over a burst)"""
    f()
    walls = []
    for _ in range(reps):
        w = time.perf_counter()
        f()
        walls.append(time.perf_counter() - w)
    calls, w0, c0 = 0, time.perf_counter(), time.process_time()
    while True:
        f()
        calls += 1
        if time.perf_counter() - w0 >= burst:
            break
    return median(walls), (time.process_time() - c0) / calls


def numpy_kernels(x, b, y):
    c = np.float32(2 * np.sqrt(2 / np.pi))
    k = np.float32(0.044715)
    t = np.empty_like(x)

    def sigmoid():
        np.negative(x, out=y)
        np.exp(y, out=y)
        np.add(y, np.float32(1), out=y)
        np.reciprocal(y, out=y)

    def gelu():  # 0.5x(1 + tanh(c/2·(x + k·x³))) = x·σ(c·x·(1 + k·x²))
        np.multiply(x, x, out=t)
        np.multiply(t, k, out=t)
        np.add(t, np.float32(1), out=t)
        np.multiply(t, x, out=t)
        np.multiply(t, -c, out=t)
        np.exp(t, out=t)
        np.add(t, np.float32(1), out=t)
        np.divide(x, t, out=y)

    return {
        "add": lambda: np.add(x, b, out=y),
        "relu": lambda: np.maximum(x, np.float32(0), out=y),
        "tanh": lambda: np.tanh(x, out=y),
        "exp": lambda: np.exp(x, out=y),
        "sigmoid": sigmoid,
        "gelu": gelu,
    }


def torch_kernels(torch, x, b, y):
    F = torch.nn.functional
    return {
        "add": lambda: torch.add(x, b, out=y),
        "relu": lambda: torch.clamp_min(x, 0, out=y),
        "tanh": lambda: torch.tanh(x, out=y),
        "exp": lambda: torch.exp(x, out=y),
        "sigmoid": lambda: torch.sigmoid(x, out=y),
        "gelu": lambda: F.gelu(x, approximate="tanh"),
    }


def main():
    reps, burst, kernels = 7, 0.25, ["add", "relu", "tanh", "exp", "sigmoid", "gelu"]
    a = sys.argv[1:]
    for i, s in enumerate(a):
        if s == "--reps":
            reps = int(a[i + 1])
        elif s == "--burst":
            burst = float(a[i + 1])
        elif s == "--kernels":
            kernels = a[i + 1].split(",")
    rng = np.random.default_rng(5)
    x = rng.random(N, dtype=np.float32) * np.float32(8) - np.float32(4)
    b = rng.random(N, dtype=np.float32)
    y = np.empty_like(x)
    out = []
    nk = numpy_kernels(x, b, y)
    for k in kernels:
        w, c = bench(nk[k], reps, burst)
        out.append(("numpy", 1, k, w, c))
    import torch
    tx, tb, ty = torch.from_numpy(x), torch.from_numpy(b), torch.from_numpy(y)
    tk = torch_kernels(torch, tx, tb, ty)
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for k in kernels:
            w, c = bench(tk[k], reps, burst)
            out.append(("torch", threads, k, w, c))
    for peer, threads, k, w, c in out:
        nb = BYTES.get(k, 8 * N)
        print(f"{peer} {threads} {k} {nb / w / 1e9:.3f} {nb / max(c, 1e-9) / 1e9:.3f}")


if __name__ == "__main__":
    main()
