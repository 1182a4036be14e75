#!/usr/bin/python3
"""Writes the PyTorch golden files for the baseline positional schemes and the adaptive span.

Every scheme is written here again, independently, from the formulas of the specs
(ape.md section 6, adaptive_span.md sections 1-2: see docs/design.md, "Specs cited in the code";
Press et al. 2022 for ALiBi) with dense per-pair tensors, so that the C++ code (relative tables gathered onto score
slots, exact span trimming) is checked against a second, naive implementation. The model is one
attention layer, in float64:

  x      [B, N, D] input (it gets a gradient too); absolute schemes: x = x + pe (sinusoidal,
         learned table at min(p, P-1)); posgrad applies them to x before an attention layer
         without hooks, as models do, and maps this twin's hooks.0.* names onto them
  q,k,v  Linear(D, D) each (q_proj, k_proj, v_proj), split into H heads of Dh = D/H
  rope   rotate q and k: interleaved pairs, theta_i = 10000^(-2i/Dh), angle p * theta_i
  scores q.k/sqrt(Dh)  + q_i . r[clip(j-i, -w, w) + w]     (shaw, not scaled)
                       - m_h |j - i|                          (alibi, m_h = 2^(-8h/H))
  masks  causal: keys j > i get -inf
  softmax; adaptive span: softmax over the keys at distance d = i - j in [1, S] only (the
         spec's 64-step trimming removes nothing at N = 7), times
         m(d) = clamp((R + c S - (d - 1)) / R, 0, 1), renormalised by (sum + 1e-8)
  out    out_proj(merge(p @ v))
  loss   mean((out - target)^2)  (+ loss_coef * S * mean(c) for the adaptive span)

Each file holds the inputs (x, target), every parameter (param.<name>) and buffer (buffer.<name>)
of the layer with posgrad's names, the output, the loss, every parameter gradient (grad.<name>),
the input gradient (grad.input) and the losses of 3 Adam steps (adam_losses; the adaptive span's
c is clamped to [0, 1] after each step), plus the config in the metadata. The adaptive span's file
also holds exact_trim.out, the output with keys past ceil(max z) + R removed before the softmax.

Usage: /usr/bin/python3 tools/golden_schemes.py [--out tests/golden]
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_transformer import golden_out_dir, write_safetensors  # noqa: E402  (the same minimal writer)

D, H, N, B = 16, 2, 7, 2
DH = D // H
LR = 0.05


class Sinusoidal(torch.nn.Module):
    def embed(self, x):
        n, d = x.shape[1], x.shape[2]
        p = torch.arange(n, dtype=torch.float64)[:, None]
        i = (torch.arange(d) // 2).double()  # float64 exponents (an int tensor times a float gives float32)
        angle = p * torch.pow(torch.tensor(10000.0, dtype=torch.float64), -2.0 * i / d)[None, :]
        pe = torch.where(torch.arange(d)[None, :] % 2 == 0, torch.sin(angle), torch.cos(angle))
        return x + pe[None]


class LearnedAbsolute(torch.nn.Module):
    def __init__(self, size):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(size, D, dtype=torch.float64))

    def embed(self, x):
        n = x.shape[1]
        p = torch.clamp(torch.arange(n), max=self.weight.shape[0] - 1)
        return x + self.weight[p][None]


class Rope(torch.nn.Module):
    def __init__(self, trainable):
        super().__init__()
        theta = torch.tensor([10000.0 ** (-2.0 * i / DH) for i in range(DH // 2)], dtype=torch.float64)
        if trainable:
            self.theta = torch.nn.Parameter(theta)
        else:
            self.register_buffer("theta", theta)

    def rotate(self, x):  # [B, H, N, Dh]
        n = x.shape[2]
        angle = torch.arange(n, dtype=torch.float64)[:, None] * self.theta[None, :]  # [N, Dh/2]
        c, s = torch.cos(angle), torch.sin(angle)
        x0, x1 = x[..., 0::2], x[..., 1::2]
        out = torch.stack([x0 * c - x1 * s, x1 * c + x0 * s], dim=-1)
        return out.reshape(x.shape)


class Shaw(torch.nn.Module):
    def __init__(self, window, per_head):
        super().__init__()
        self.window = window
        shape = (H, 2 * window + 1, DH) if per_head else (2 * window + 1, DH)
        self.r = torch.nn.Parameter(0.3 * torch.randn(*shape, dtype=torch.float64))

    def scores(self, q):  # q [B, H, N, Dh] -> [B, H, N, N]
        n = q.shape[2]
        i = torch.arange(n)[:, None]
        j = torch.arange(n)[None, :]
        row = torch.clamp(j - i, -self.window, self.window) + self.window  # [N, N]
        if self.r.dim() == 2:
            rel = self.r[row]  # [N, N, Dh]
            return torch.einsum("bhid,ijd->bhij", q, rel)
        rel = self.r[:, row]  # [H, N, N, Dh]
        return torch.einsum("bhid,hijd->bhij", q, rel)


class Alibi(torch.nn.Module):
    def scores(self, q):
        n = q.shape[2]
        slopes = torch.tensor([2.0 ** (-8.0 * h / H) for h in range(1, H + 1)], dtype=torch.float64)
        dist = (torch.arange(n)[None, :] - torch.arange(n)[:, None]).abs().double()
        return -slopes[:, None, None] * dist[None]  # [H, N, N]


class AdaptiveSpan(torch.nn.Module):
    def __init__(self, c, max_span, ramp, loss_coef):
        super().__init__()
        self.c = torch.nn.Parameter(torch.tensor(c, dtype=torch.float64))
        self.S, self.R, self.coef = max_span, ramp, loss_coef
        self.exact_trim = False  # also drop d > ceil(max z) + R (what posgrad's key range does)

    def distances(self, n):
        return torch.arange(n)[:, None] - torch.arange(n)[None, :]  # d = i - j

    def allowed(self, n):
        d = self.distances(n)
        keep = self.S
        if self.exact_trim:
            keep = min(self.S, math.ceil(self.c.max().item() * self.S) + math.ceil(self.R))
        return (d >= 1) & (d <= keep)

    def mask(self, n):
        d = self.distances(n).double()
        m = torch.clamp((self.R + self.c[:, None, None] * self.S - (d[None] - 1)) / self.R, 0, 1)
        return m * self.allowed(n)[None].double()  # [H, N, N]

    def loss(self):
        return self.coef * self.S * self.c.mean()


class Layer(torch.nn.Module):
    def __init__(self, hook, causal):
        super().__init__()
        for p in ("q_proj", "k_proj", "v_proj", "out_proj"):
            setattr(self, p, torch.nn.Linear(D, D).double())
        self.hooks = torch.nn.ModuleList([hook])
        self.causal = causal

    def forward(self, x):
        hook = self.hooks[0]
        if hasattr(hook, "embed"):
            x = hook.embed(x)
        b, n, _ = x.shape

        def heads(t):
            return t.view(b, n, H, DH).permute(0, 2, 1, 3)

        q, k, v = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        if isinstance(hook, Rope):
            q, k = hook.rotate(q), hook.rotate(k)
        s = q @ k.transpose(-1, -2) / math.sqrt(DH)
        if hasattr(hook, "scores"):
            s = s + hook.scores(q)
        blocked = torch.zeros(n, n, dtype=torch.bool)
        if self.causal:
            blocked |= torch.arange(n)[None, :] > torch.arange(n)[:, None]
        if isinstance(hook, AdaptiveSpan):
            blocked |= ~hook.allowed(n)
        # A finite fill keeps a fully blocked row (the span's first token) free of NaN: its
        # probabilities are uniform here and then multiplied by a mask of zeros.
        p = torch.softmax(s.masked_fill(blocked, -1e30), dim=-1)
        if isinstance(hook, AdaptiveSpan):
            p = p * hook.mask(n)[None]
            p = p / (p.sum(-1, keepdim=True) + 1e-8)
        o = (p @ v).permute(0, 2, 1, 3).reshape(b, n, D)
        return self.out_proj(o)

    def loss(self, x, target):
        loss = ((self.forward(x) - target) ** 2).mean()
        hook = self.hooks[0]
        if isinstance(hook, AdaptiveSpan):
            loss = loss + hook.loss()
        return loss


def cases():
    return [
        # file name, registry name, options (as config text), causal mask, the PyTorch twin
        ("sinusoidal", "sinusoidal", {}, False, lambda: Sinusoidal()),
        ("learned_absolute", "learned_absolute", {"size": "5", "clamp": "true"}, False, lambda: LearnedAbsolute(5)),
        ("rope_frozen", "rope", {"trainable": "false"}, True, lambda: Rope(False)),
        ("rope_tuned", "rope", {"trainable": "true"}, False, lambda: Rope(True)),
        ("shaw", "shaw", {"window": "2"}, True, lambda: Shaw(2, False)),
        ("shaw_per_head", "shaw", {"window": "3", "per_head": "true"}, False, lambda: Shaw(3, True)),
        ("alibi", "alibi", {}, True, lambda: Alibi()),
        # c = [0.1, 0.3]: spans z = [0.6, 1.8], so the C++ key range trims distance 6
        ("adaptive_span", "adaptive_span", {"max_span": "6", "ramp": "3", "loss_coef": "0.05"}, False,
         lambda: AdaptiveSpan([0.1, 0.3], 6, 3.0, 0.05)),
    ]


def make_golden(index, name, scheme, options, causal, make_hook, out_dir):
    torch.manual_seed(100 + index)
    hook = make_hook()
    layer = Layer(hook, causal)
    x = torch.randn(B, N, D, dtype=torch.float64, requires_grad=True)
    target = torch.randn(B, N, D, dtype=torch.float64)

    tensors = {"x": x.detach().clone(), "target": target}
    for pname, p in layer.named_parameters():
        tensors["param." + pname] = p.detach().clone()
    for bname, buf in layer.named_buffers():
        tensors["buffer." + bname] = buf.detach().clone()

    out = layer(x)
    loss = layer.loss(x, target)
    loss.backward()
    tensors["out"] = out.detach()
    tensors["loss"] = loss.detach().reshape([])
    tensors["grad.input"] = x.grad.detach().clone()
    for pname, p in layer.named_parameters():
        tensors["grad." + pname] = p.grad.detach().clone()

    if isinstance(hook, AdaptiveSpan):
        # The same forward with exact trimming: equal to posgrad's output up to rounding, while
        # "out" (the spec's trimming, nothing removed at N = 7) differs by the renormaliser's
        # epsilon times the softmax mass of the trimmed keys.
        hook.exact_trim = True
        with torch.no_grad():
            tensors["exact_trim.out"] = layer(x).detach()
        hook.exact_trim = False

    opt = torch.optim.Adam(layer.parameters(), lr=LR)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        step_loss = layer.loss(x.detach(), target)
        step_loss.backward()
        opt.step()
        if isinstance(hook, AdaptiveSpan):
            with torch.no_grad():
                hook.c.clamp_(0, 1)
        losses.append(step_loss.item())
    tensors["adam_losses"] = torch.tensor(losses, dtype=torch.float64)
    cfg = dict(scheme=scheme, options=options, causal=causal, width=D, heads=H, tokens=N, batch=B, lr=LR)
    path = os.path.join(out_dir, f"schemes_{name}.safetensors")
    write_safetensors(path, tensors, {"config": json.dumps(cfg), "seed": 100 + index, "torch": torch.__version__,
                                      "generator": "tools/golden_schemes.py"})
    print(f"wrote {path}: loss {loss.item():.6f}, 3 Adam losses {losses[0]:.5f} -> {losses[-1]:.5f}")


def main():
    out = golden_out_dir(__doc__.split("\n")[0])
    for index, (name, scheme, options, causal, make_hook) in enumerate(cases()):
        make_golden(index, name, scheme, options, causal, make_hook, out)


if __name__ == "__main__":
    main()
