#!/usr/bin/python3
"""Writes the PyTorch golden files for the char LM with adaptive span and cache
(attention/lm/char_transformer.h; spec adaptive_span.md sections 1-3).

The model is written here from the spec's formulas, the way the original adaptive-span code
computes them (dense content scores in key space, unskewed to distance space; probabilities
skewed back), with posgrad's parameter names:

  x = embedding[tokens]                                           [B, M, D]
  layer (post-LN): x = norm1(x + attn(x, cache)); x = norm2(x + fc2(relu(fc1(x))))
        (pre-LN):  a = norm1(x); x = x + attn(a, cache); x = x + ff(norm2(x)); final_norm at the end
  attn: W = S - trim (trim = floor(min(S-1, S - min(S, ceil(max_h c S) + R)) / g) g)
        src = [last W rows of the cache (zero-padded on the left); x]
        scores = unskew(q k^T) + q key_pe[:, S-W:]  (key_pe) | rope-rotated q, k (rope)
        p = softmax(scores / sqrt(Dh)); p = p m / (sum p m + 1e-8), m = clamp((R + cS - (d-1))/R, 0, 1)
        out = out_proj(skew(p) v)
  cache: the last min(S, W + margin) attention inputs of each layer, detached
  loss = mean NLL + sum over layers of lambda S mean_h(c)

Each file holds the tokens, every parameter (param.<name>), the logits of segment 0 (zero cache)
and of segment 1 (with segment 0's cache), the loss of segment 1 and every gradient of it
(grad.<name>, span parameters included), then 3 steps of Adagrad with the per-tensor step clip
(segments 0, 1, 2, cache carried, c clamped after each step): their losses (adagrad_losses) and
the parameters after them (after.<name>). Everything is float64.

Usage: /usr/bin/python3 tools/golden_charlm.py [--out tests/golden]
"""
import json
import math
import os

import torch

from golden_transformer import golden_out_dir, write_safetensors


class Attention(torch.nn.Module):
    def __init__(self, cfg, init_c):
        super().__init__()
        D, H = cfg["width"], cfg["heads"]
        self.cfg = cfg
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            setattr(self, name, torch.nn.Linear(D, D, bias=False))
        self.span = torch.nn.Module()
        self.span.c = torch.nn.Parameter(torch.tensor(init_c, dtype=torch.get_default_dtype()))

    def window(self):
        S, R, g = self.cfg["max_span"], self.cfg["ramp"], self.cfg["granularity"]
        zmax = max(0.0, float(self.span.c.detach().max())) * S
        max_size = min(S, int(math.ceil(zmax) + math.ceil(R)))
        return S - min(S - 1, S - max_size) // g * g

    def rotate(self, x, first):
        B, H, N, Dh = x.shape
        P = Dh // 2
        pos = torch.arange(first, first + N, dtype=torch.float64).view(N, 1)
        freq = torch.tensor([10000.0 ** (-2.0 * t / Dh) for t in range(P)], dtype=torch.float64).view(1, P)
        cos, sin = torch.cos(pos * freq).to(torch.get_default_dtype()), torch.sin(pos * freq).to(torch.get_default_dtype())
        pairs = x.reshape(B, H, N, P, 2)
        e, o = pairs[..., 0], pairs[..., 1]
        return torch.stack([e * cos - o * sin, o * cos + e * sin], 4).reshape(B, H, N, Dh)

    def forward(self, h, cache, key_pe):
        cfg = self.cfg
        B, M, D = h.shape
        H, S, R = cfg["heads"], cfg["max_span"], cfg["ramp"]
        Dh = D // H
        W = self.window()
        C = 0 if cache is None else cache.shape[1]
        if C >= W:
            mem = cache[:, C - W:]
        else:
            zeros = torch.zeros(B, W - C, D)
            mem = zeros if C == 0 else torch.cat([zeros, cache], 1)
        src = torch.cat([mem, h], 1)                                # [B, W + M, D]

        def heads(t):
            return t.view(B, -1, H, Dh).permute(0, 2, 1, 3)
        q, k, v = heads(self.q_proj(h)), heads(self.k_proj(src)), heads(self.v_proj(src))
        if cfg["position"] == "rope":
            q, k = self.rotate(q, W), self.rotate(k, 0)
        x = q @ k.transpose(2, 3)                                   # [B, H, M, W + M]
        x = torch.cat([x.reshape(B, H, -1), torch.zeros(B, H, M)], -1).view(B, H, M, W + M + 1)[..., :W]
        if cfg["position"] == "key_pe":
            x = x + q @ key_pe[:, S - W:]
        p = torch.softmax(x * (1.0 / math.sqrt(Dh)), -1)
        d = torch.tensor([float(W - j) for j in range(W)], dtype=torch.float64)
        ramp = ((R - (d - 1.0)) / R).to(torch.get_default_dtype()).view(1, W)
        m = torch.clamp(self.span.c.view(H, 1) * (S / R) + ramp, 0.0, 1.0)
        p = p * m.view(H, 1, W)
        p = p / (p.sum(-1, keepdim=True) + 1e-8)
        band = torch.cat([p, torch.zeros(B, H, M, M + 1)], -1).reshape(B, H, -1)[..., :M * (W + M)]
        out = band.view(B, H, M, W + M) @ v
        return self.out_proj(out.permute(0, 2, 1, 3).reshape(B, M, D))

    def cache_size(self):
        return min(self.cfg["max_span"], self.window() + self.cfg["cache_margin"])


class CharLM(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        V, D, H, S, F = cfg["vocab"], cfg["width"], cfg["heads"], cfg["max_span"], cfg["ff"]
        self.cfg = cfg
        self.embedding = torch.nn.Embedding(V, D)
        if cfg["position"] == "key_pe":
            self.key_pe = torch.nn.Parameter(torch.randn(D // H, S))
        self.layers = torch.nn.ModuleList()
        for l in range(cfg["layers"]):
            b = torch.nn.Module()
            b.attn = Attention(cfg, cfg["init_c"][l])
            b.norm1 = torch.nn.LayerNorm(D)
            b.fc1 = torch.nn.Linear(D, F)
            b.fc2 = torch.nn.Linear(F, D)
            b.norm2 = torch.nn.LayerNorm(D)
            self.layers.append(b)
        if cfg["pre_norm"]:
            self.final_norm = torch.nn.LayerNorm(D)
        self.out = torch.nn.Linear(D, V)

    def forward(self, tokens, cache):
        x = self.embedding(tokens)
        key_pe = getattr(self, "key_pe", None)
        new_cache = []
        for l, b in enumerate(self.layers):
            keep = b.attn.cache_size()
            old = cache[l] if cache is not None else None
            if self.cfg["pre_norm"]:
                a = b.norm1(x)
                inp = a
                h = x + b.attn(a, old, key_pe)
                x = h + b.fc2(torch.relu(b.fc1(b.norm2(h))))
            else:
                inp = x
                h = b.norm1(x + b.attn(x, old, key_pe))
                x = b.norm2(h + b.fc2(torch.relu(b.fc1(h))))
            full = inp.detach() if old is None else torch.cat([old, inp.detach()], 1)
            new_cache.append(full[:, max(0, full.shape[1] - keep):])
        if self.cfg["pre_norm"]:
            x = self.final_norm(x)
        return self.out(x), new_cache

    def span_loss(self):
        S, lam = self.cfg["max_span"], self.cfg["span_loss"]
        return sum(b.attn.span.c.mean() * (lam * S) for b in self.layers)


def loss_of(model, logits, targets):
    V = model.cfg["vocab"]
    return torch.nn.functional.cross_entropy(logits.reshape(-1, V), targets.reshape(-1)) + model.span_loss()


def adagrad_step(params, sums, lr, clip):
    """The adaptive-span code's AdagradWithGradClip (spec 3.3): per-tensor step clip, the
    accumulator adds the unclipped g^2."""
    with torch.no_grad():
        for p, s in zip(params, sums):
            g = p.grad
            clr = lr
            norm = float(g.double().norm())
            if norm > clip:
                clr = lr * clip / (norm + 1e-10)
            s.add_(g * g)
            p.add_((g * -clr) / (s.sqrt() + 1e-10))


def make_golden(cfg, seed, path):
    # float64: a key slot beyond every head's span gets a gradient of the order of the
    # renormaliser's 1e-8, which Adagrad's first step turns into a full step; in float32 its sign
    # is rounding noise, in float64 both implementations agree.
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(seed)
    model = CharLM(cfg)
    B, M = cfg["batch"], cfg["segment"]
    tokens = torch.randint(0, cfg["vocab"], (B, 3 * M + 1))
    segs = [(tokens[:, i * M:(i + 1) * M], tokens[:, i * M + 1:(i + 1) * M + 1]) for i in range(3)]
    params = {"param." + n: p.detach().clone() for n, p in model.named_parameters()}

    logits0, cache = model(segs[0][0], None)
    logits1, _ = model(segs[1][0], cache)
    loss1 = loss_of(model, logits1, segs[1][1])
    loss1.backward()
    grads = {"grad." + n: p.grad.detach().clone() for n, p in model.named_parameters()}

    plist = list(model.parameters())
    sums = [torch.zeros_like(p) for p in plist]
    losses, cache = [], None
    for i in range(3):
        model.zero_grad()
        logits, cache = model(segs[i][0], cache)
        loss = loss_of(model, logits, segs[i][1])
        loss.backward()
        adagrad_step(plist, sums, cfg["lr"], cfg["clip"])
        with torch.no_grad():
            for b in model.layers:
                b.attn.span.c.clamp_(0.0, 1.0)
        losses.append(float(loss))
    after = {"after." + n: p.detach().clone() for n, p in model.named_parameters()}

    tensors = {"tokens": tokens, "logits0": logits0, "logits1": logits1, "loss1": loss1.reshape(1),
               "adagrad_losses": torch.tensor(losses)}
    tensors.update(params)
    tensors.update(grads)
    tensors.update(after)
    write_safetensors(path, tensors, {"config": json.dumps(cfg), "seed": seed})
    print(f"wrote {path}: loss1 {float(loss1):.6f}, adagrad losses {losses}")


def main():
    out = golden_out_dir(__doc__)
    base = {"vocab": 11, "layers": 2, "width": 16, "heads": 2, "ff": 32, "max_span": 40, "ramp": 8.0,
            "granularity": 8, "cache_margin": 8, "span_loss": 2e-3, "batch": 2, "segment": 12,
            "lr": 0.05, "clip": 0.03, "init_c": [[0.1, 0.25], [0.0, 0.05]]}
    make_golden(dict(base, position="key_pe", pre_norm=False), 7, os.path.join(out, "charlm_key_pe_postnorm.safetensors"))
    make_golden(dict(base, position="rope", pre_norm=True), 8, os.path.join(out, "charlm_rope_prenorm.safetensors"))


if __name__ == "__main__":
    main()
