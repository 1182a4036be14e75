#!/usr/bin/python3
"""Writes the PyTorch golden files for the dynamic span (attention/spans/dynamic_span.h).

The dynamic span of the adaptive-span paper (section 4; spec adaptive_span.md section 1.1) is
written here again, independently, from its formula, with dense per-pair tensors, so that the C++
code (a per-query-row table over a window of distances, per-query key ranges in the fused path)
is checked against a second, naive implementation. The model is one attention layer, in float64:

  xq     [B, Nq, D] the queries' inputs; the keys' inputs are xq (self-attention, file
         dynamic_span) or [memory; xq] with a fixed memory [B, M, D] (file dynamic_span_memory:
         a segment over a memory, as charlm's layers attend; query i sits at key position M + i)
  q,k,v  Linear(D, D) each (q_proj, k_proj, v_proj), split into H heads of Dh = D/H
  z      S sigmoid(xq v^T + b)   [B, H, Nq]   (v [H, D], b [H]: hooks.0.v, hooks.0.b)
  mask   m = clamp((R + z - (d - 1)) / R, 0, 1) for 1 <= d <= S, else 0, at d = query - key
  p      softmax of q.k/sqrt(Dh) over the keys with m > 0 only, then p m / (sum p m + 1e-8)
  out    out_proj(merge(p @ v))
  loss   mean((out - target)^2) + loss_coef * mean(z)

Each file holds the inputs (x, memory when there is one, target), every parameter (param.<name>)
with posgrad's names, the output, the loss, every parameter gradient (grad.<name>), the input
gradient (grad.input) and the losses of 3 Adam steps (adam_losses), plus the config in the
metadata.

Usage: /usr/bin/python3 tools/golden_dynamic_span.py [--out tests/golden]
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_transformer import golden_out_dir, write_safetensors  # noqa: E402  (the same minimal writer)

D, H, B = 16, 2, 2
DH = D // H
LR = 0.05
MAX_SPAN, RAMP, LOSS_COEF = 6, 2.0, 0.05


class DynamicSpan(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.v = torch.nn.Parameter(0.5 * torch.randn(H, D, dtype=torch.float64))
        self.b = torch.nn.Parameter(torch.tensor([-1.0, 0.5], dtype=torch.float64))
        self.z = None

    def spans(self, xq):  # [B, Nq, D] -> [B, H, Nq]
        self.z = MAX_SPAN * torch.sigmoid(xq @ self.v.t() + self.b).permute(0, 2, 1)
        return self.z

    def mask(self, z, memory_len, nq):  # [B, H, Nq, M + Nq]
        i = torch.arange(nq)[:, None] + memory_len
        j = torch.arange(memory_len + nq)[None, :]
        d = (i - j).double()
        m = torch.clamp((RAMP + z[..., None] - (d - 1)) / RAMP, 0, 1)
        return m * ((d >= 1) & (d <= MAX_SPAN)).double()

    def loss(self):
        return LOSS_COEF * self.z.mean()


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        for p in ("q_proj", "k_proj", "v_proj", "out_proj"):
            setattr(self, p, torch.nn.Linear(D, D).double())
        self.hooks = torch.nn.ModuleList([DynamicSpan()])

    def forward(self, xq, memory):
        span = self.hooks[0]
        xk = xq if memory is None else torch.cat([memory, xq], dim=1)
        b, nq, _ = xq.shape
        nk = xk.shape[1]

        def heads(t, n):
            return t.view(b, n, H, DH).permute(0, 2, 1, 3)

        q, k, v = heads(self.q_proj(xq), nq), heads(self.k_proj(xk), nk), heads(self.v_proj(xk), nk)
        m = span.mask(span.spans(xq), nk - nq, nq)
        s = q @ k.transpose(-1, -2) / math.sqrt(DH)
        # The softmax runs over the keys with m > 0 (a query's own span); a finite fill keeps the
        # first token's row (no key) free of NaN: its mask of zeros makes its output 0.
        p = torch.softmax(s.masked_fill(m <= 0, -1e30), dim=-1)
        p = p * m
        p = p / (p.sum(-1, keepdim=True) + 1e-8)
        o = (p @ v).permute(0, 2, 1, 3).reshape(b, nq, D)
        return self.out_proj(o)

    def loss(self, x, memory, target):
        return ((self.forward(x, memory) - target) ** 2).mean() + self.hooks[0].loss()


def make_golden(name, seed, memory_len, nq, out_dir):
    torch.manual_seed(seed)
    layer = Layer()
    x = torch.randn(B, nq, D, dtype=torch.float64, requires_grad=True)
    memory = torch.randn(B, memory_len, D, dtype=torch.float64) if memory_len > 0 else None
    target = torch.randn(B, nq, D, dtype=torch.float64)

    tensors = {"x": x.detach().clone(), "target": target}
    if memory is not None:
        tensors["memory"] = memory
    for pname, p in layer.named_parameters():
        tensors["param." + pname] = p.detach().clone()

    out = layer(x, memory)
    loss = layer.loss(x, memory, target)
    loss.backward()
    tensors["out"] = out.detach()
    tensors["spans"] = layer.hooks[0].z.detach()
    tensors["loss"] = loss.detach().reshape([])
    tensors["grad.input"] = x.grad.detach().clone()
    for pname, p in layer.named_parameters():
        tensors["grad." + pname] = p.grad.detach().clone()

    opt = torch.optim.Adam(layer.parameters(), lr=LR)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        step_loss = layer.loss(x.detach(), memory, target)
        step_loss.backward()
        opt.step()
        losses.append(step_loss.item())
    tensors["adam_losses"] = torch.tensor(losses, dtype=torch.float64)
    cfg = dict(scheme="dynamic_span", options={"max_span": str(MAX_SPAN), "ramp": str(RAMP),
                                               "loss_coef": str(LOSS_COEF)},
               width=D, heads=H, queries=nq, memory=memory_len, batch=B, lr=LR)
    path = os.path.join(out_dir, f"{name}.safetensors")
    write_safetensors(path, tensors, {"config": json.dumps(cfg), "seed": seed, "torch": torch.__version__,
                                      "generator": "tools/golden_dynamic_span.py"})
    print(f"wrote {path}: loss {loss.item():.6f}, spans {tensors['spans'].min().item():.2f} .. "
          f"{tensors['spans'].max().item():.2f}, 3 Adam losses {losses[0]:.5f} -> {losses[-1]:.5f}")


def main():
    out = golden_out_dir(__doc__.split("\n")[0])
    make_golden("dynamic_span", 281, 0, 9, out)
    make_golden("dynamic_span_memory", 282, 5, 6, out)


if __name__ == "__main__":
    main()
