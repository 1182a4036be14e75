#!/usr/bin/python3
"""Golden files for the Tree-SQ positional scheme (tree_sq, spec ape.md section 6).

Written from the spec's formulas, not from posgrad's code: the layer alone in float64,

  word(p)   heap p -> the word of 0-indexed node p - 1 (node n > 0: parent (n - 1) // kappa,
            branch (n - 1) % kappa); heap 0 (SOS, padding) and 1 (the root): the empty word
  stack     one-hot branch choices, most recent step first, the last max_depth steps:
            stack[l * kappa + b] = 1 for the step l levels above the node, branch b     [Z = kappa * max_depth]
  p         tanh(w), w [F], F = D / Z
  rows      rows[d, f] = p_f^d * sqrt((1 - p_f^2) * F / 2), d = 0 .. max_depth - 1
  weight    levels (Shiv & Quirk): weight[z] = rows[z // kappa];
            released: rows tiled kappa times, rows.repeat(kappa, 1), so weight[z] = rows[z % max_depth]
  out       x + (stack[..., :, None] * weight).flatten(-2)

Each file tests/golden/tree_sq_<case>.safetensors holds x [B, N, D], heap int64 [B, N] (with a
node deeper than max_depth, SOS and padding), g [B, N, D] (the upstream gradient: the loss is
sum(out * g)), param.w, out, grad.w, grad.input, and the stacks [B, N, Z]; the metadata has the
config (JSON) and the torch version.

Usage: /usr/bin/python3 tools/golden_tree_sq.py [--out tests/golden]
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_transformer import golden_out_dir, write_safetensors  # noqa: E402


def word(heap, kappa):
    if heap <= 1:
        return []
    node, steps = heap - 1, []
    while node > 0:
        steps.append((node - 1) % kappa)
        node = (node - 1) // kappa
    return steps[::-1]


def stacks(heaps, kappa, max_depth):
    out = torch.zeros(len(heaps), len(heaps[0]), kappa * max_depth)
    for b, row in enumerate(heaps):
        for n, p in enumerate(row):
            for level, branch in enumerate(word(p, kappa)[::-1][:max_depth]):
                out[b, n, level * kappa + branch] = 1.0
    return out


def tree_sq(x, w, stack, kappa, max_depth, tiling):
    F = w.shape[0]
    p = torch.tanh(w)
    rows = torch.stack([p ** d for d in range(max_depth)]) * torch.sqrt((1 - p ** 2) * F / 2)  # [max_depth, F]
    if tiling == "levels":
        weight = rows[torch.arange(kappa * max_depth) // kappa]
    else:
        weight = rows.repeat(kappa, 1)
    return x + (stack[..., None] * weight).flatten(-2)


def check_spec_examples():
    assert word(5, 2) == [0, 1] and word(9, 2) == [0, 0, 1] and word(1, 2) == [] and word(0, 2) == []
    assert word(16, 2) == [0, 0, 0, 0] and word(3, 3) == [1] and word(5, 3) == [0, 0]
    s = stacks([[5]], 2, 3)[0, 0].tolist()
    assert s == [0, 1, 1, 0, 0, 0], s  # [0, 1]: last step 1 at level 0, then 0 at level 1


def main():
    out_dir = golden_out_dir(__doc__.split("\n")[0])
    torch.set_default_dtype(torch.float64)
    check_spec_examples()
    cases = {
        "levels": dict(width=24, branching=2, max_depth=3, tiling="levels",
                       heap=[[0, 1, 2, 5, 16, 23, 0], [0, 1, 3, 6, 7, 14, 9]]),
        "released": dict(width=24, branching=2, max_depth=3, tiling="released",
                         heap=[[0, 1, 2, 5, 16, 23, 0], [0, 1, 3, 6, 7, 14, 9]]),
        "ternary": dict(width=12, branching=3, max_depth=2, tiling="levels",
                        heap=[[0, 1, 2, 4, 5, 14, 40]]),
    }
    for index, (name, cfg) in enumerate(cases.items()):
        torch.manual_seed(30 + index)
        kappa, max_depth, D = cfg["branching"], cfg["max_depth"], cfg["width"]
        F = D // (kappa * max_depth)
        heap = torch.tensor(cfg["heap"], dtype=torch.int64)
        B, N = heap.shape
        w = torch.nn.Parameter(torch.empty(F).uniform_(0.7, 0.999))
        x = torch.randn(B, N, D, requires_grad=True)
        g = torch.randn(B, N, D)
        stack = stacks(cfg["heap"], kappa, max_depth)
        out = tree_sq(x, w, stack, kappa, max_depth, cfg["tiling"])
        (out * g).sum().backward()
        tensors = {"x": x.detach().clone(), "heap": heap, "g": g, "param.w": w.detach().clone(), "out": out.detach(),
                   "grad.w": w.grad.detach().clone(), "grad.input": x.grad.detach().clone(), "stacks": stack}
        path = os.path.join(out_dir, f"tree_sq_{name}.safetensors")
        write_safetensors(path, tensors, {"config": json.dumps(cfg), "torch": torch.__version__,
                                          "generator": "tools/golden_tree_sq.py"})
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
