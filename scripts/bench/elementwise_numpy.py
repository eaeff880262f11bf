#!/usr/bin/env python3
"""NumPy tanh and exp over 16M floats in [-4, 4), GB/s (read + write), medians of 7:
the twin of scripts/bench/elementwise.lua.  /usr/bin/python3 scripts/bench/elementwise_numpy.py"""
import numpy as np, time
x=(np.random.rand(16*1024*1024).astype(np.float32)*8-4); y=np.empty_like(x)
out=[]
for f in ['tanh','exp']:
  ts=[]
  for i in range(7):
    t=time.perf_counter(); getattr(np,f)(x,out=y); ts.append(time.perf_counter()-t)
  ts.sort(); out.append(f"{f} {8*x.size/ts[3]/1e9:.1f}")
print("  ".join(out))
