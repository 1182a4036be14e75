#!/usr/bin/python3
"""PyTorch twin of bench_charlm_step: one training step (forward over [cache; segment], cross-entropy
plus span loss, backward, AdamW, clamp) of the char LM with adaptive span, written as a PyTorch user
would write it with MASKING ONLY: every query scores all S cached keys and the segment's keys
(dense [M, S + M]), the learned key_pe term is gathered by distance, and the soft span mask
(plus causality) multiplies the probabilities. No trimming: the cost does not follow the spans.

--device cuda runs on the GPU (each step timed between two torch.cuda.synchronize calls), TF32 off
like posgrad.

Prints one JSON line: {"median_ms": ..., "tokens_per_s": ...}.
Usage: charlm_torch.py --batch 16 --segment 128 --max-span 256 --layers 4 --width 128 --heads 4
                       --ff 512 --span-init 0.1 --reps 5 --warmup 2 --device cpu|cuda
"""
import argparse
import json
import math
import time

import torch


class Layer(torch.nn.Module):
    def __init__(self, D, H, F, S, R, init):
        super().__init__()
        self.H, self.S, self.R = H, S, R
        self.q, self.k, self.v, self.o = (torch.nn.Linear(D, D, bias=False) for _ in range(4))
        self.c = torch.nn.Parameter(torch.full((H,), init))
        self.norm1, self.norm2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.fc1, self.fc2 = torch.nn.Linear(D, F), torch.nn.Linear(F, D)

    def attn(self, x, cache, key_pe):
        B, M, D = x.shape
        H, S, R = self.H, self.S, self.R
        Dh = D // H
        src = torch.cat([cache, x], 1)                                   # [B, S + M, D]
        q = self.q(x).view(B, M, H, Dh).transpose(1, 2)
        k = self.k(src).view(B, S + M, H, Dh).transpose(1, 2)
        v = self.v(src).view(B, S + M, H, Dh).transpose(1, 2)
        d = (S + torch.arange(M, device=x.device).view(M, 1)) - torch.arange(S + M, device=x.device).view(1, S + M)   # distance [M, S + M]
        valid = (d >= 1) & (d <= S)
        pos = q @ key_pe                                                 # [B, H, M, S], column S - d
        pos = torch.gather(pos, 3, (S - d.clamp(1, S)).expand(B, H, M, S + M))
        scores = (q @ k.transpose(2, 3) + pos) / math.sqrt(Dh)
        scores = scores.masked_fill(~valid, float("-inf"))
        p = torch.softmax(scores, -1)
        m = torch.clamp((R + self.c.view(H, 1, 1) * S - (d - 1).float()) / R, 0, 1) * valid
        p = p * m
        p = p / (p.sum(-1, keepdim=True) + 1e-8)
        return self.o((p @ v).transpose(1, 2).reshape(B, M, D))

    def forward(self, x, cache, key_pe):
        h = self.norm1(x + self.attn(x, cache, key_pe))
        return self.norm2(h + self.fc2(torch.relu(self.fc1(h))))


def main():
    p = argparse.ArgumentParser()
    for name, default in [("batch", 16), ("segment", 128), ("max-span", 256), ("layers", 4), ("width", 128),
                          ("heads", 4), ("ff", 512), ("reps", 5), ("warmup", 2), ("vocab", 65)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--span-init", type=float, default=0.1)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    a = p.parse_args()
    dev = torch.device(a.device)
    if a.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    B, M, S, D = a.batch, a.segment, a.max_span, a.width
    emb = torch.nn.Embedding(a.vocab, D).to(dev)
    key_pe = torch.nn.Parameter(torch.randn(D // a.heads, S, device=dev))
    layers = torch.nn.ModuleList(Layer(D, a.heads, a.ff, S, 32.0, a.span_init) for _ in range(a.layers)).to(dev)
    out = torch.nn.Linear(D, a.vocab).to(dev)
    params = list(emb.parameters()) + [key_pe] + list(layers.parameters()) + list(out.parameters())
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.0)
    cache = [torch.zeros(B, S, D, device=dev) for _ in layers]
    times = []
    for step in range(a.warmup + a.reps):
        tokens = torch.randint(0, a.vocab, (B, M + 1)).to(dev)
        if a.device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        x = emb(tokens[:, :M])
        new_cache = []
        for l, layer in enumerate(layers):
            new_cache.append(torch.cat([cache[l], x.detach()], 1)[:, -S:])
            x = layer(x, cache[l], key_pe)
        cache = new_cache
        loss = torch.nn.functional.cross_entropy(out(x).reshape(-1, a.vocab), tokens[:, 1:].reshape(-1))
        loss = loss + sum(l.c.mean() * 2e-6 * S for l in layers)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for l in layers:
                l.c.clamp_(0, 1)
        if a.device == "cuda":
            torch.cuda.synchronize()
        if step >= a.warmup:
            times.append(time.perf_counter() - start)
    median = sorted(times)[len(times) // 2]
    print(json.dumps({"median_ms": median * 1e3, "tokens_per_s": B * M / median}))


if __name__ == "__main__":
    main()
