#!/usr/bin/env python3
"""Two vela binaries side by side on scripts/bench/elementwise.lua, with the
peers, interleaved: each round runs BEFORE and AFTER (in alternating order,
`--no-peers --rounds 1`, vela on 1 and 2 threads) and then
scripts/bench/elementwise_peers.py once (NumPy on 1 thread, PyTorch on 1 and
2). Prints the median over rounds of each figure (GB per cpu-second and GB/s
by the wall clock), each binary's ratio to the best peer (per cpu-second: vela
on 1 thread against any peer; wall: vela on 2 threads against the best on at
most 2), and the load average before and after. From the repository root:

    /usr/bin/python3 scripts/bench/elementwise_ab.py BEFORE AFTER [--rounds 5] [--reps 7] [--kernels exp,sigmoid,gelu]
"""
import argparse
import re
import subprocess
import sys


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run_vela(binary, kernels, reps):
    out = subprocess.run([binary, "scripts/bench/elementwise.lua", "--no-peers", "--rounds", "1", "--reps",
                          str(reps), "--kernels", kernels], capture_output=True, text=True, check=True).stdout
    figures, what = {}, None
    for line in out.splitlines():
        if line.startswith("GB per cpu-second"):
            what = "cpu"
        elif line.startswith("GB/s by the wall clock"):
            what = "wall"
        elif what and re.match(r"^\w+\s+[\d.]+\s+[\d.]+", line):
            k, one, two = line.split()[:3]
            figures[(what, k, 1)] = float(one)
            figures[(what, k, 2)] = float(two)
    return figures, out.splitlines()[0]


def run_peers(kernels, reps):
    out = subprocess.run(["/usr/bin/python3", "scripts/bench/elementwise_peers.py", "--reps", str(reps), "--kernels",
                          kernels], capture_output=True, text=True, check=True).stdout
    figures = {}
    for peer, threads, k, wall, cpu in re.findall(r"(\w+) (\d+) (\w+) ([\d.]+) ([\d.]+)", out):
        figures[("wall", k, peer, int(threads))] = float(wall)
        figures[("cpu", k, peer, int(threads))] = float(cpu)
    return figures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--kernels", default="exp,sigmoid,gelu")
    a = ap.parse_args()
    kernels = a.kernels.split(",")
    runs = {"before": [], "after": []}
    peers = []
    load0 = loadavg()
    loops = None
    for r in range(a.rounds):
        order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
        for which in order:
            figures, loops = run_vela(getattr(a, which), a.kernels, a.reps)
            runs[which].append(figures)
        peers.append(run_peers(a.kernels, a.reps))
        print(f"round {r + 1} done, load {loadavg()}", file=sys.stderr)
    print(loops)
    print(f"load average {load0} before, {loadavg()} after; {a.rounds} rounds (before/after alternating), "
          f"{a.reps} calls each, 16M floats; medians over rounds")
    peer_keys = sorted({(p, t) for f in peers for (_, _, p, t) in f})
    for what in ("cpu", "wall"):
        print()
        print("GB per cpu-second" if what == "cpu" else "GB/s by the wall clock")
        head = f"{'kernel':8}" + "".join(f" {n + ' ' + str(t):>10}" for n in ("before", "after") for t in (1, 2))
        head += "".join(f" {p + ' ' + str(t):>10}" for p, t in peer_keys)
        print(head + "  before / best peer  after / best peer")
        for k in kernels:
            line = f"{k:8}"
            mine = {}
            for n in ("before", "after"):
                for t in (1, 2):
                    mine[(n, t)] = median([f[(what, k, t)] for f in runs[n]])
                    line += f" {mine[(n, t)]:10.2f}"
            best, who = 0.0, "-"
            for p, t in peer_keys:
                v = median([f[(what, k, p, t)] for f in peers])
                line += f" {v:10.2f}"
                if (what == "cpu" or t <= 2) and v > best:
                    best, who = v, f"{p} {t}"
            t = 1 if what == "cpu" else 2
            line += f"  {mine[('before', t)] / best:.2f} ({who})  {mine[('after', t)] / best:.2f}"
            print(line)


if __name__ == "__main__":
    main()
