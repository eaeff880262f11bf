#!/usr/bin/env python3
"""Medians over the rounds of run.sh's raw lines, as markdown tables.

   python3 scripts/bench/blas_peers/summary.py build/blas_peers/raw.txt

Each cell: median GFLOP/s wall / median GFLOP per cpu-second over the rounds;
the ratio columns divide a library's per-cpu-second median by vela's at the same
shape and threads (> 1: the library is faster per processor-second)."""
import statistics
import sys
from collections import defaultdict


def main(path):
    runs = defaultdict(list)  # key -> [(wall, cpu)]
    impl, kernels, loads, head = {}, [], [], []
    for line in open(path):
        f = line.split()
        if not f:
            continue
        if line.startswith("#") or f[0] in ("cpu", "verbose"):
            head.append(line.rstrip())
        elif f[0] == "kernels":
            if line.rstrip() not in kernels:
                kernels.append(line.rstrip())
        elif f[0] == "load":
            loads.append(float(f[2]))
        elif f[0] == "gemm" and len(f) == 7 and f[5] != "WRONG":
            runs[("gemm", f[1], int(f[2]), f[3], f[4])].append((float(f[5]), float(f[6])))
        elif f[0] == "gemm":
            print("WRONG RESULT:", line.rstrip())
        elif f[0] == "conv" and f[6] != "-":
            key = ("conv", f[1], int(f[2]), f[3], f"{f[4]} {f[5]}")
            runs[key].append((float(f[6]), float(f[7])))
            impl[key] = f[8]
        elif f[0] == "conv":
            impl[("conv", f[1], int(f[2]), f[3], f"{f[4]} {f[5]}")] = f[8]
        elif f[0] == "peak":
            runs[("peak", "vela", int(f[2]), f[5], "fma")].append((float(f[3]), float(f[4])))
    for h in head:
        print(h)
    for k in kernels:
        print(k)
    if loads:
        print(f"load average (1 min) at each round's start: {', '.join(f'{x:.1f}' for x in loads)}")

    def med(key):
        v = runs.get(key)
        if not v:
            return None
        return statistics.median(w for w, _ in v), statistics.median(c for _, c in v), v

    def cell(key):
        m = med(key)
        return "—" if m is None else f"{m[0]:.0f} / {m[1]:.0f}"

    def span(key):
        m = med(key)
        if m is None:
            return ""
        cs = [c for _, c in m[2]]
        return f"{min(cs):.0f}–{max(cs):.0f}"

    for t in (1, 2):
        p = med(("peak", "vela", t, next((k[3] for k in runs if k[0] == "peak"), ""), "fma"))
        if p:
            print(f"\nFMA peak, {t} thread(s): {p[0]:.0f} GFLOP/s wall, {p[1]:.0f} per cpu-second (medians)")

    shapes = sorted({k[4] for k in runs if k[0] == "gemm"}, key=lambda s: list(k[4] for k in runs).index(s))
    for t in (1, 2):
        cols = [("openblas", "lib"), ("blis", "lib"), ("dnnl", "lib")]
        if t == 2:
            cols += [("openblas", "split"), ("blis", "split"), ("dnnl", "split")]
        cols.append(("vela", "split"))
        names = [f"{l}" + ("" if t == 1 else f" {m}") for l, m in cols]
        print(f"\nsgemm, {t} thread(s): GFLOP/s wall / per cpu-second (medians of the rounds); "
              "ratio = per cpu-second ÷ vela's")
        print("| shape | " + " | ".join(names) + " | " + " | ".join(f"{n} ÷ vela" for n in names[:-1]) + " |")
        print("|---" * (2 * len(cols)) + "|")
        for s in shapes:
            v = med(("gemm", "vela", t, "split", s))
            ratios = []
            for l, m in cols[:-1]:
                x = med(("gemm", l, t, m, s))
                ratios.append("—" if not (x and v) else f"{x[1] / v[1]:.2f}")
            print(f"| {s} | " + " | ".join(cell(("gemm", l, t, m, s)) for l, m in cols) + " | " +
                  " | ".join(ratios) + " |")
        print("per cpu-second ranges: " + "; ".join(
            f"{s} " + ", ".join(f"{l}{'' if t == 1 else ' ' + m} {span(('gemm', l, t, m, s))}" for l, m in cols)
            for s in shapes))

    prims = [k[4] for k in runs if k[0] == "conv" and k[1] == "vela"]
    prims = sorted(set(prims), key=prims.index)
    for t in (1, 2):
        print(f"\nconvolutions, batch 128, {t} thread(s): GFLOP/s wall / per cpu-second (medians), implementation")
        print("| layer, pass | vela | oneDNN plain (NCHW) | oneDNN any (blocked) | plain ÷ vela | any ÷ vela |")
        print("|---|---|---|---|---|---|")
        for p in prims:
            v, a, b = ("conv", "vela", t, "plain", p), ("conv", "dnnl", t, "plain", p), ("conv", "dnnl", t, "any", p)
            mv, ma, mb = med(v), med(a), med(b)
            r = lambda x: "—" if not (x and mv) else f"{x[1] / mv[1]:.2f}"
            print(f"| {p} | {cell(v)} ({impl.get(v, '?')}) | {cell(a)} ({impl.get(a, '?')}) | "
                  f"{cell(b)} ({impl.get(b, '?')}) | {r(ma)} | {r(mb)} |")
        for k, i in impl.items():  # oneDNN primitives that only had the reference loops
            if k[2] == t and k not in runs:
                print(f"  {k[4]} {k[3]}: {i} (not timed)")
        print("per cpu-second ranges: " + "; ".join(
            f"{p}: vela {span(('conv', 'vela', t, 'plain', p))}, plain {span(('conv', 'dnnl', t, 'plain', p))}, "
            f"any {span(('conv', 'dnnl', t, 'any', p))}" for p in prims))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/blas_peers/raw.txt")
