#!/usr/bin/env python3
"""The character GPT of scripts/bench/gpt.lua (and examples/gpt.lua) in
PyTorch, for a side-by-side figure.

Token embedding (vocab × dim) + learned positions (context × dim) → `layers`
pre-norm blocks: h = x + Wo·attn(Wqkv·ln1(x)) (causal, `heads` heads, no
biases), y = h + fc2(gelu_tanh(fc1(ln2(h)))) (fc1: dim → 4·dim, fc2: 4·dim →
dim) → layer norm → linear to the vocabulary; softmax cross-entropy, Adam lr
0.003. The same 8 batches of random tokens are cycled, made before the clock
starts, so the figure is the training step (forward, backward, Adam, loss.item()).
Each run times --steps steps after 3 of warm-up; the last line gives the
median tokens/s of --runs runs (wall clock and per second of processor time).

    /usr/bin/python3 scripts/bench/gpt_torch.py [--steps 20] [--runs 5] [--batch 16] [--context 64] [--dim 128]
                                                [--layers 4] [--heads 4] [--vocab 113] [--threads N]

PyTorch: Debian's python3-torch (apt-get install python3-torch).
--threads N: OMP_NUM_THREADS before torch is imported, then both of its pools.
"""
import argparse
import math
import os
import statistics
import time


def main():
    ap = argparse.ArgumentParser()
    for name, default in [("steps", 20), ("runs", 5), ("batch", 16), ("context", 64), ("dim", 128), ("layers", 4),
                          ("heads", 4), ("vocab", 113), ("threads", 0)]:
        ap.add_argument("--" + name, type=int, default=default)
    a = ap.parse_args()
    if a.threads:
        os.environ["OMP_NUM_THREADS"] = str(a.threads)
    import torch
    from torch import nn
    import torch.nn.functional as F
    if a.threads:
        torch.set_num_threads(a.threads)
        torch.set_num_interop_threads(a.threads)
    torch.manual_seed(1)
    T, B, D, V, H = a.context, a.batch, a.dim, a.vocab, a.heads

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.qkv, self.wo = nn.Linear(D, 3 * D, bias=False), nn.Linear(D, D, bias=False)
            self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
            self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

        def forward(self, x):  # x: B × T × D
            q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
            q, k, v = (m.view(B, T, H, D // H).transpose(1, 2) for m in (q, k, v))  # B × H × T × d
            s = (q @ k.transpose(-2, -1)) / math.sqrt(D // H)
            p = F.softmax(s.masked_fill(~self.mask, float("-inf")), dim=-1)
            o = (p @ v).transpose(1, 2).reshape(B, T, D)
            h = x + self.wo(o)
            return h + self.fc2(F.gelu(self.fc1(self.ln2(h)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.pos = nn.Embedding(V, D), nn.Parameter(0.1 * torch.randn(T, D))
            self.blocks = nn.Sequential(*[Block() for _ in range(a.layers)])
            self.ln, self.out = nn.LayerNorm(D), nn.Linear(D, V)

        def forward(self, idx):  # idx: B × T
            return self.out(self.ln(self.blocks(self.emb(idx) + self.pos)))

    net = GPT()
    opt = torch.optim.Adam(net.parameters(), lr=0.003)
    g = torch.Generator().manual_seed(7)
    data = [(torch.randint(0, V, (B, T), generator=g), torch.randint(0, V, (B, T), generator=g)) for _ in range(8)]
    k = 0

    def step():
        nonlocal k
        x, y = data[k % len(data)]
        k += 1
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(x).view(-1, V), y.view(-1))
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(3):
        step()
    rates, cpu_rates = [], []
    loss = 0.0
    for run in range(a.runs):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(a.steps):
            loss = step()
        rates.append(a.steps * T * B / (time.perf_counter() - t0))
        cpu_rates.append(a.steps * T * B / (time.process_time() - c0))
        print(f"run {run + 1}: {rates[-1]:.0f} tokens/s")
    nparams = sum(p.numel() for p in net.parameters())
    print(f"{statistics.median(rates):8.0f} tokens/s (median of {a.runs} runs of {a.steps} steps; "
          f"{statistics.median(cpu_rates):6.0f} per cpu-second)   loss {loss:.3f}   "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads, {nparams} parameters")


if __name__ == "__main__":
    main()
