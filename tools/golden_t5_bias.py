#!/usr/bin/python3
"""Golden file for the tutorial scheme t5_bias (docs/tutorial-new-scheme.md).

One attention layer in float64, written from T5's formula with a dense per-pair bucket matrix
(no relative grid, no gathering), so the C++ table-and-gather implementation is checked against
a naive one:

  q, k, v = Linear(D, D)(x) each, split into H heads of Dh = D / H
  logits  = q.k / sqrt(Dh) + bias[bucket(j - i), h]
  out     = out_proj(merge(softmax(logits) @ v));   loss = mean((out - target)^2)

The file holds x, target, every parameter (param.<name>, posgrad's names), out, loss, every
gradient (grad.<name>, grad.input), the bucket matrix (buckets, int64 [N, N]) and the losses of
3 Adam steps (adam_losses). Usage: /usr/bin/python3 tools/golden_t5_bias.py [--out tests/golden]
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_transformer import golden_out_dir, write_safetensors  # noqa: E402

D, H, N, B = 8, 2, 12, 2
BUCKETS, MAX_DISTANCE = 8, 10
LR = 0.05


def t5_bucket(offset, buckets, max_distance):
    """T5's bidirectional bucket of offset = key - query (scalar Python int)."""
    n = -offset
    per_direction = buckets // 2
    bucket = per_direction if n < 0 else 0
    n = abs(n)
    exact = per_direction // 2
    if n < exact:
        return bucket + n
    large = exact + int(math.log(n / exact) / math.log(max_distance / exact) * (per_direction - exact))
    return bucket + min(per_direction - 1, large)


def main():
    out_dir = golden_out_dir(__doc__.split("\n")[0])
    torch.manual_seed(5)
    dh = D // H
    lin = {name: torch.nn.Linear(D, D).double() for name in ("q_proj", "k_proj", "v_proj", "out_proj")}
    bias = torch.nn.Parameter(0.3 * torch.randn(BUCKETS, H, dtype=torch.float64))
    buckets = torch.tensor([[t5_bucket(j - i, BUCKETS, MAX_DISTANCE) for j in range(N)] for i in range(N)])
    x = torch.randn(B, N, D, dtype=torch.float64, requires_grad=True)
    target = torch.randn(B, N, D, dtype=torch.float64)
    params = {"hooks.0.bias": bias}
    for name, m in lin.items():
        params[name + ".weight"] = m.weight
        params[name + ".bias"] = m.bias

    def forward(inp):
        heads = lambda t: t.reshape(B, N, H, dh).transpose(1, 2)  # noqa: E731
        q, k, v = heads(lin["q_proj"](inp)), heads(lin["k_proj"](inp)), heads(lin["v_proj"](inp))
        logits = q @ k.transpose(-1, -2) / math.sqrt(dh) + bias[buckets].permute(2, 0, 1)[None]
        o = torch.softmax(logits, -1) @ v
        return lin["out_proj"](o.transpose(1, 2).reshape(B, N, D))

    tensors = {"x": x.detach().clone(), "target": target, "buckets": buckets}
    tensors.update({"param." + n: p.detach().clone() for n, p in params.items()})
    out = forward(x)
    loss = ((out - target) ** 2).mean()
    loss.backward()
    tensors.update({"out": out.detach(), "loss": loss.detach().reshape(1), "grad.input": x.grad.detach().clone()})
    tensors.update({"grad." + n: p.grad.detach().clone() for n, p in params.items()})
    opt = torch.optim.Adam(list(params.values()), lr=LR)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        step_loss = ((forward(x.detach()) - target) ** 2).mean()
        step_loss.backward()
        opt.step()
        losses.append(((forward(x.detach()) - target) ** 2).mean().item())
    tensors["adam_losses"] = torch.tensor(losses, dtype=torch.float64)
    cfg = {"width": D, "heads": H, "tokens": N, "batch": B, "buckets": BUCKETS, "max_distance": MAX_DISTANCE, "lr": LR}
    path = os.path.join(out_dir, "t5_bias.safetensors")
    write_safetensors(path, tensors, {"config": json.dumps(cfg), "torch": torch.__version__})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
