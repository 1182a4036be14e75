#!/usr/bin/python3
"""PyTorch twin of bench_posattn_step: one training step (forward, cross-entropy, backward, Adam) of
the posattn thesis classifier (6 post-LN blocks, D 64, H 8, Dh 8, FFN 128, dropout 0.1, pooling of
the last token; per layer a SIREN (3 layers, hidden 64, omega 10) or the 1-D sinusoids + Linear
baseline over the relative grid, u and v, and optionally a Gaussian span with sigma and threshold t)
on random [B, S, S, 3] images, in one of two layouts:

  v1         the thesis's own layout (spec section 7, V1): E is unfolded to P [H, Dh, N, N] and the
             Gaussian to G* [N, N] by indexing per query/key pair; positional logits are
             sum_d Q[b,h,d,q] P[h,d,q,k], the positional bias v . P; the box is a -inf mask.
  efficient  what a competent PyTorch user would write: q @ E_h^T -> [B, H, N, R] and v . E -> [H, R],
             then one index gather to [B, H, N, N] (a small autograd Function, as torch.gather's
             backward would keep [B, H, N, R] alive per layer); G gathered the same way; the box as
             a -inf mask.

Both compute all N^2 scores whatever the span (masking only); neither is posgrad's window path.
--device cuda runs on the GPU (each step timed between two torch.cuda.synchronize calls), TF32 off
like posgrad.
Prints one JSON line: {"median_ms": ..., "peak_rss_mib": ..., "layout": ...}. Peak RSS is the
process's (getrusage), the torch import (about 0.3 GiB) included.
Usage: posattn_torch.py --layout v1|efficient --batch 20 --side 32 --dims 1|2 --span 0|1
                        --scheme siren|txl_baseline --threshold 0.1 --sigmas 0.3 --reps 2 --warmup 1
                        --device cpu|cuda
--sigmas: one value for every layer and axis, or L*dims comma-separated values (layer-major), e.g.
the sigmas a trained model learned.
"""
import argparse
import json
import math
import resource
import time

import torch


def relative_grid(side, dims):
    """Normalised relative coordinates [R, dims] and, per query/key pair, the row of the grid
    holding E_{key - query}: idx [N, N]; offsets [N, N, dims] in tokens (for the span box)."""
    if dims == 1:
        n = side * side
        coords = torch.linspace(-1, 1, 2 * n - 1).view(-1, 1)
        pos = torch.arange(n)
        off = (pos.view(1, n) - pos.view(n, 1)).unsqueeze(-1)          # [N, N, 1] key - query
        idx = off[..., 0] + (n - 1)
        return coords, idx, off, [n]
    axis = torch.linspace(-1, 1, 2 * side - 1)
    coords = torch.stack(torch.meshgrid(axis, axis, indexing="ij"), -1).view(-1, 2)   # [R, 2]
    rows = torch.arange(side).repeat_interleave(side)
    cols = torch.arange(side).repeat(side)
    dr = rows.view(1, -1) - rows.view(-1, 1)
    dc = cols.view(1, -1) - cols.view(-1, 1)
    idx = (dr + side - 1) * (2 * side - 1) + (dc + side - 1)
    return coords, idx, torch.stack([dr, dc], -1), [side, side]


class Siren(torch.nn.Module):
    def __init__(self, dims, hidden=64, out=64, omega=10.0):
        super().__init__()
        self.omega = omega
        self.l1, self.l2, self.l3 = torch.nn.Linear(dims, hidden), torch.nn.Linear(hidden, hidden), torch.nn.Linear(hidden, out)
        with torch.no_grad():
            self.l1.weight.uniform_(-1 / dims, 1 / dims)
            bound = math.sqrt(6 / hidden) / omega
            self.l2.weight.uniform_(-bound, bound)
            for l in (self.l1, self.l2, self.l3):
                l.bias.zero_()

    def forward(self, coords):                                          # [R, dims] -> [R, D]
        return self.l3(torch.sin(self.omega * self.l2(torch.sin(self.omega * self.l1(coords)))))


class Baseline(torch.nn.Module):
    """Interleaved sinusoids over integer positions 0 .. 2N-2, then Linear(64, 64) (1-D only)."""
    def __init__(self, n, hidden=64, out=64):
        super().__init__()
        r = torch.arange(2 * n - 1, dtype=torch.float32).view(-1, 1)
        freq = torch.pow(10000.0, -torch.arange(0, hidden, 2, dtype=torch.float32) / hidden)
        s = torch.zeros(2 * n - 1, hidden)
        s[:, 0::2], s[:, 1::2] = torch.sin(r * freq), torch.cos(r * freq)
        self.register_buffer("sinusoids", s)
        self.linear = torch.nn.Linear(hidden, out)

    def forward(self, coords):
        return self.linear(self.sinusoids)


class GatherRelative(torch.autograd.Function):
    """rel [B, H, N, R] -> rel[..., idx] [B, H, N, N]. torch.gather's own backward keeps its whole
    input alive ([B, H, N, R]: 2.6 GB per layer in 2-D at B = 20); this one keeps only the index."""
    @staticmethod
    def forward(ctx, rel, idx):
        ctx.save_for_backward(idx)
        ctx.rel_shape = rel.shape
        return torch.gather(rel, 3, idx.expand(*rel.shape[:2], *idx.shape))

    @staticmethod
    def backward(ctx, grad):
        idx, = ctx.saved_tensors
        out = grad.new_zeros(ctx.rel_shape)
        return out.scatter_add_(3, idx.expand(grad.shape), grad), None


class Block(torch.nn.Module):
    def __init__(self, a, dims, n_tokens, sigma):
        super().__init__()
        D, H = a.width, a.heads
        self.H, self.Dh, self.layout, self.threshold = H, D // H, a.layout, a.threshold
        self.qkv, self.o = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        for l in (self.qkv, self.o):
            torch.nn.init.xavier_uniform_(l.weight)
            torch.nn.init.zeros_(l.bias)
        bound = math.sqrt(6 / (2 * self.Dh))
        self.u = torch.nn.Parameter(torch.empty(H, self.Dh).uniform_(-bound, bound))
        self.v = torch.nn.Parameter(torch.empty(H, self.Dh).uniform_(-bound, bound))
        self.pe = Siren(dims) if a.scheme == "siren" else Baseline(n_tokens)
        self.sigma = torch.nn.Parameter(torch.tensor(sigma)) if a.span else None
        self.norm1, self.norm2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.fc1, self.fc2 = torch.nn.Linear(D, a.ff), torch.nn.Linear(a.ff, D)
        self.drop = torch.nn.Dropout(0.1)

    def gaussian(self, coords):                                         # [R]
        return torch.exp(-0.5 * (coords.pow(2) / self.sigma.pow(2).clamp_min(1e-6)).sum(-1))

    def box(self, off, sizes):                                          # [N, N] bool: inside the box
        if self.threshold <= 0:
            return None
        x = math.sqrt(-2 * math.log(self.threshold))
        inside = torch.ones(off.shape[:2], dtype=torch.bool, device=off.device)
        for d, s in enumerate(sizes):
            half = math.ceil(x * abs(float(self.sigma[d])) * (s - 1))
            inside &= off[..., d].abs() <= half
        return inside

    def attention(self, x, grid):
        coords, idx, off, sizes = grid
        B, N, D = x.shape
        H, Dh = self.H, self.Dh
        q, k, v = self.qkv(x).view(B, N, 3, H, Dh).permute(2, 0, 3, 1, 4)   # each [B, H, N, Dh]
        E = self.pe(coords).view(-1, H, Dh)                             # [R, H, Dh]
        content = q @ k.transpose(2, 3) + (self.u.view(1, H, 1, Dh) * k).sum(-1).unsqueeze(2)   # [B, H, N, N]
        if self.layout == "v1":
            P = E[idx].permute(2, 3, 0, 1)                              # [H, Dh, N, N]: P[h,:,q,k] = E[k - q]
            pos = torch.einsum("bhqd,hdqk->bhqk", q, P) + torch.einsum("hd,hdqk->hqk", self.v, P)
            A = content + pos
            if self.sigma is not None:
                A = A * self.gaussian(coords)[idx]                      # G* [N, N]
        else:
            Et = E.permute(1, 2, 0)                                     # [H, Dh, R]
            rel = q @ Et.unsqueeze(0) + (self.v.unsqueeze(-1) * Et).sum(1).view(1, H, 1, -1)   # [B, H, N, R]
            A = content + GatherRelative.apply(rel, idx)
            if self.sigma is not None:
                A = A * self.gaussian(coords)[idx]
        A = A / math.sqrt(Dh)
        if self.sigma is not None:
            inside = self.box(off, sizes)
            if inside is not None:
                A = A.masked_fill(~inside, float("-inf"))
        p = torch.softmax(A, -1)
        return self.o((p @ v).transpose(1, 2).reshape(B, N, D))

    def forward(self, x, grid):
        h = self.norm1(x + self.drop(self.attention(x, grid)))
        return self.norm2(h + self.drop(self.fc2(self.drop(torch.relu(self.fc1(h))))))


def main():
    p = argparse.ArgumentParser()
    for name, default in [("batch", 20), ("side", 32), ("dims", 1), ("span", 0), ("layers", 6), ("width", 64),
                          ("heads", 8), ("ff", 128), ("reps", 2), ("warmup", 1), ("classes", 10)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--layout", choices=["v1", "efficient"], default="efficient")
    p.add_argument("--scheme", choices=["siren", "txl_baseline"], default="siren")
    p.add_argument("--threshold", type=float, default=0.1)
    p.add_argument("--sigmas", default="0.3")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    a = p.parse_args()
    if a.scheme == "txl_baseline" and a.dims != 1:
        raise SystemExit("posattn_torch.py: the txl_baseline scheme is 1-D only (--dims 1)")
    sigmas = [float(s) for s in a.sigmas.split(",")]
    if len(sigmas) == 1:
        sigmas = sigmas * (a.layers * a.dims)
    if len(sigmas) != a.layers * a.dims:
        raise SystemExit(f"posattn_torch.py: --sigmas has {len(sigmas)} values, needs 1 or layers x dims = {a.layers * a.dims}")
    torch.manual_seed(0)
    B, S, D = a.batch, a.side, a.width
    N = S * S
    dev = torch.device(a.device)
    if a.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    coords, idx, off, sizes = relative_grid(S, a.dims)
    grid = (coords.to(dev), idx.to(dev), off.to(dev), sizes)
    inp = torch.nn.Sequential(torch.nn.Dropout(0.1), torch.nn.Linear(3, D))
    blocks = torch.nn.ModuleList(Block(a, a.dims, N, sigmas[l * a.dims:(l + 1) * a.dims]) for l in range(a.layers))
    out = torch.nn.Sequential(torch.nn.Linear(D, 64), torch.nn.LayerNorm(64), torch.nn.ReLU(), torch.nn.Dropout(0.1),
                              torch.nn.Linear(64, a.classes))
    for m in (inp, blocks, out):
        m.to(dev)
    params = list(inp.parameters()) + list(blocks.parameters()) + list(out.parameters())
    opt = torch.optim.Adam(params, lr=1e-3)
    images = (torch.rand(B, S, S, 3) * 2 - 1).to(dev)                  # channels last, in [-1, 1]
    labels = torch.randint(0, a.classes, (B,)).to(dev)
    times = []
    for step in range(a.warmup + a.reps):
        if a.device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        x = inp(images.view(B, N, 3))
        for block in blocks:
            x = block(x, grid)
        loss = torch.nn.functional.cross_entropy(out(x[:, -1]), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if a.device == "cuda":
            torch.cuda.synchronize()
        if step >= a.warmup:
            times.append(time.perf_counter() - start)
    median = sorted(times)[len(times) // 2]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"median_ms": median * 1e3, "peak_rss_mib": peak, "layout": a.layout}))


if __name__ == "__main__":
    main()
