#!/usr/bin/env python3
"""NumPy tanh and exp over 16M floats in [-4, 4), GB/s (read + write), medians of 7:
the twin of scripts/bench/elementwise.lua.  /usr/bin/python3 scripts/bench/elementwise_numpy.py

With --act: ms per call on 512x1024 float32 in [-4, 4), median (and min) of 15, the twin of
scripts/bench/act_cpu.lua: gelu (tanh form), gelu' , gelu_backward (da * gelu'), tanh, sigmoid,
each as NumPy's float32 expression with temporaries (NumPy has no fused kernel for these)."""
import sys, time
import numpy as np

def bench(f, n):
    ts = []
    for _ in range(n + 1):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    ts = sorted(ts[1:])
    return ts[len(ts) // 2], ts[0]

if '--act' in sys.argv[1:]:
    rng = np.random.default_rng(5)
    x = (rng.random((512, 1024), dtype=np.float32) * 8 - 4)
    da = rng.random((512, 1024), dtype=np.float32)
    c = np.float32(2 * np.sqrt(2 / np.pi)); k = np.float32(0.044715)
    def gelu(): return x * (np.float32(1) / (np.float32(1) + np.exp(-c * x * (np.float32(1) + k * x * x))))
    def gelu_prime():
        s = np.float32(1) / (np.float32(1) + np.exp(-c * x * (np.float32(1) + k * x * x)))
        return s + x * s * (np.float32(1) - s) * c * (np.float32(1) + np.float32(3) * k * x * x)
    runs = [('gelu', gelu), ('gelu_prime', gelu_prime), ('gelu_backward', lambda: da * gelu_prime()),
            ('tanh', lambda: np.tanh(x)), ('sigmoid', lambda: np.float32(1) / (np.float32(1) + np.exp(-x)))]
    out = []
    for name, f in runs:
        med, lo = bench(f, 15)
        out.append(f"{name} {med * 1e3:.2f} ({lo * 1e3:.2f})")
    print("NumPy ms/call (512x1024 float32): " + "  ".join(out))
    sys.exit(0)

x = (np.random.rand(16 * 1024 * 1024).astype(np.float32) * 8 - 4); y = np.empty_like(x)
out = []
for f in ['tanh', 'exp']:
    ts = []
    for i in range(7):
        t = time.perf_counter(); getattr(np, f)(x, out=y); ts.append(time.perf_counter() - t)
    ts.sort(); out.append(f"{f} {8 * x.size / ts[3] / 1e9:.1f}")
print("  ".join(out))
