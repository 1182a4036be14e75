#!/usr/bin/python3
"""Writes the PyTorch golden file for posgrad's matrix_exp and orthogonal generators.

For each case (a name, a shape [G, d, d], a dtype, a scale) the generator A is drawn from
N(0, scale^2) with a fixed seed, and the file holds, under "<case>.<key>":

  A            the generators                                        [G, d, d]
  W            torch.matrix_exp(A - A^T)                             [G, d, d]
  R            fixed weights (uniform 0.5..1.5)                      [G, d, d]
  grad_W       d sum(W * R) / dA                                     [G, d, d]
  powers       [I, W, W^2, ..., W^S], by repeated products           [S+1, G, d, d]
  Rp           fixed weights                                         [S+1, G, d, d]
  grad_powers  d sum(powers * Rp) / dA                               [S+1, G, d, d]

plus one case "general" where W = torch.matrix_exp(A) of a non-symmetric, non-skew A (the
general forward and backward, not only the orthogonal one); it has no power table. The list of
cases and S are in the metadata. Every computation runs in the case's dtype.

Usage: /usr/bin/python3 tools/golden_matrix_exp.py [--out tests/golden]
"""
import argparse
import os
import sys

import torch

sys.dont_write_bytecode = True  # importing the sibling script must not leave tools/__pycache__
from golden_transformer import write_safetensors  # noqa: E402  (the project's safetensors writer)

POWERS = 9  # S: the table holds W^0..W^9 (four doubling rounds in posgrad)

CASES = [
    # name, shape, dtype, scale of A (larger scales need more squarings)
    ("g4_d8_f64", (4, 8, 8), torch.float64, 0.6),
    ("g2_d16_f64", (2, 16, 16), torch.float64, 1.0),
    ("g4_d8_f32", (4, 8, 8), torch.float32, 0.6),
    ("g2_d16_f32", (2, 16, 16), torch.float32, 1.0),
]


def powers_by_products(w, size):
    eye = torch.eye(w.shape[-1], dtype=w.dtype).expand_as(w)
    table = [eye]
    for _ in range(size):
        table.append(table[-1] @ w)
    return torch.stack(table)


def orthogonal_case(name, shape, dtype, scale, gen):
    a = (torch.randn(shape, generator=gen, dtype=torch.float64) * scale).to(dtype).requires_grad_()
    r = torch.rand(shape, generator=gen, dtype=torch.float64).add(0.5).to(dtype)
    rp = torch.rand((POWERS + 1,) + shape, generator=gen, dtype=torch.float64).add(0.5).to(dtype)
    w = torch.matrix_exp(a - a.transpose(-1, -2))
    (grad_w,) = torch.autograd.grad((w * r).sum(), a)
    table = powers_by_products(torch.matrix_exp(a - a.transpose(-1, -2)), POWERS)
    (grad_p,) = torch.autograd.grad((table * rp).sum(), a)
    return {"A": a, "W": w, "R": r, "grad_W": grad_w, "powers": table, "Rp": rp, "grad_powers": grad_p}


def general_case(gen):
    shape = (3, 5, 5)
    a = (torch.randn(shape, generator=gen, dtype=torch.float64) * 1.5).requires_grad_()
    r = torch.rand(shape, generator=gen, dtype=torch.float64).add(0.5)
    w = torch.matrix_exp(a)
    (grad_w,) = torch.autograd.grad((w * r).sum(), a)
    return {"A": a, "W": w, "R": r, "grad_W": grad_w}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "golden"))
    args = parser.parse_args()
    gen = torch.Generator().manual_seed(20240607)
    tensors = {}
    for name, shape, dtype, scale in CASES:
        for key, t in orthogonal_case(name, shape, dtype, scale, gen).items():
            tensors[f"{name}.{key}"] = t
    for key, t in general_case(gen).items():
        tensors[f"general.{key}"] = t
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "matrix_exp.safetensors")
    metadata = {"cases": ",".join(c[0] for c in CASES), "powers": POWERS, "torch": torch.__version__}
    write_safetensors(path, tensors, metadata)
    print(f"wrote {path}: {len(tensors)} tensors")


if __name__ == "__main__":
    main()
