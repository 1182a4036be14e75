"""PyTorch twin of bench_attention_paths: one multi-head attention layer (four Linear(D, D)
projections, dense scores, a box mask of the given radius on a 1-D or 2-D grid, softmax,
weighted sum), forward + backward of sum(output). Prints "median_ms <value>".

Usage: attention_paths_torch.py --structure 1024 | 32x32 --radius R (-1 = no mask)
       [--batch 1] [--width 128] [--heads 4] [--reps 3] [--warmup 1]
"""
import argparse
import math
import time

import torch


def box_mask(structure, radius):
    coords = torch.cartesian_prod(*[torch.arange(s) for s in structure]).reshape(-1, len(structure))
    off = coords[None, :, :] - coords[:, None, :]  # [N, N, n] key - query
    return (off.abs() > radius).any(-1)  # True = blocked


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--structure", required=True)
    p.add_argument("--radius", type=int, default=-1)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    a = p.parse_args()
    structure = [int(s) for s in a.structure.split("x")]
    n = math.prod(structure)
    B, D, H = a.batch, a.width, a.heads
    Dh = D // H
    torch.manual_seed(0)
    proj = torch.nn.ModuleList([torch.nn.Linear(D, D) for _ in range(4)])
    blocked = box_mask(structure, a.radius) if a.radius >= 0 else None
    x0 = torch.randn(B, n, D)

    def step():
        x = x0.clone().requires_grad_(True)
        q, k, v = [proj[i](x).reshape(B, n, H, Dh).transpose(1, 2) for i in range(3)]
        s = q @ k.transpose(-1, -2) / math.sqrt(Dh)
        if blocked is not None:
            s = s.masked_fill(blocked, float("-inf"))
        o = torch.softmax(s, -1) @ v
        out = proj[3](o.transpose(1, 2).reshape(B, n, D))
        out.sum().backward()

    times = []
    for r in range(a.warmup + a.reps):
        t0 = time.perf_counter()
        step()
        t1 = time.perf_counter()
        if r >= a.warmup:
            times.append((t1 - t0) * 1e3)
    times.sort()
    print(f"median_ms {times[len(times) // 2]:.3f}")
    print(f"threads {torch.get_num_threads()}")


if __name__ == "__main__":
    main()
