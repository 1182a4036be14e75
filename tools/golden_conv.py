#!/usr/bin/python3
"""Writes the PyTorch golden file for posgrad's conv2d and max_pool2d (tensor/conv.h).

Each conv case "<case>" holds, under "<case>.<key>":

  x        the input                                     [B, C, Y, X]
  w        the weight                                    [Co, C/G, kh, kw]
  b        the bias (only for cases with one)            [Co]
  options  int64 [stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups]
  y        torch.nn.functional.conv2d(x, w, b, ...)       [B, Co, Yo, Xo]
  R        fixed weights (uniform 0.5..1.5)              y's shape
  grad_x, grad_w, grad_b   d sum(y * R) / d input, weight, bias

and each pooling case "<case>" holds x, options int64 [kernel_h, kernel_w, stride_h, stride_w,
pad_h, pad_w], y = max_pool2d(x, ...), R and grad_x. The "tokenizer" cases are CCT's stem at
small widths: conv 3x3 (no padding, no bias) -> ReLU -> max_pool2d(3) on 32 x 32 images, with
the gradients of the conv weight and the image. Every computation runs in the case's dtype.

Usage: /usr/bin/python3 tools/golden_conv.py [--out tests/golden]
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # importing the sibling script must not leave tools/__pycache__
from golden_transformer import golden_out_dir, write_safetensors  # noqa: E402

CONV_CASES = [
    # name, x shape, Co, kernel, stride, padding, dilation, groups, bias, dtype
    ("plain_f64", (2, 3, 7, 6), 4, (3, 3), (1, 1), (0, 0), (1, 1), 1, True, torch.float64),
    ("strided_padded_f64", (2, 4, 9, 8), 6, (3, 2), (2, 3), (1, 2), (1, 1), 2, True, torch.float64),
    ("dilated_grouped_f64", (1, 6, 10, 9), 3, (2, 3), (1, 2), (2, 1), (2, 3), 3, False, torch.float64),
    ("depthwise_f32", (3, 4, 8, 8), 8, (3, 3), (1, 1), (1, 1), (1, 1), 4, True, torch.float32),
    ("cct_stem_f32", (4, 3, 32, 32), 16, (3, 3), (1, 1), (0, 0), (1, 1), 1, False, torch.float32),
]

POOL_CASES = [
    # name, x shape, kernel, stride, padding, dtype
    ("pool3_f64", (2, 3, 9, 9), (3, 3), (3, 3), (0, 0), torch.float64),
    ("pool3s2p1_f64", (2, 2, 8, 7), (3, 3), (2, 2), (1, 1), torch.float64),
    ("pool_rect_f32", (1, 4, 10, 11), (2, 3), (1, 2), (1, 1), torch.float32),
]


def weights_like(t, gen):
    return torch.rand(t.shape, generator=gen, dtype=torch.float64).add(0.5).to(t.dtype)


def conv_case(spec, gen):
    name, xs, co, k, s, p, d, g, has_bias, dtype = spec
    x = torch.randn(xs, generator=gen, dtype=torch.float64).to(dtype).requires_grad_()
    w = (torch.randn((co, xs[1] // g) + k, generator=gen, dtype=torch.float64) * 0.3).to(dtype).requires_grad_()
    b = torch.randn(co, generator=gen, dtype=torch.float64).to(dtype).requires_grad_() if has_bias else None
    y = F.conv2d(x, w, b, stride=s, padding=p, dilation=d, groups=g)
    r = weights_like(y, gen)
    grads = torch.autograd.grad((y * r).sum(), [x, w] + ([b] if has_bias else []))
    out = {"x": x, "w": w, "options": torch.tensor(list(s) + list(p) + list(d) + [g]), "y": y, "R": r,
           "grad_x": grads[0], "grad_w": grads[1]}
    if has_bias:
        out.update({"b": b, "grad_b": grads[2]})
    return name, out


def pool_case(spec, gen):
    name, xs, k, s, p, dtype = spec
    x = torch.randn(xs, generator=gen, dtype=torch.float64).to(dtype).requires_grad_()
    y = F.max_pool2d(x, k, s, p)
    r = weights_like(y, gen)
    (grad_x,) = torch.autograd.grad((y * r).sum(), x)
    return name, {"x": x, "options": torch.tensor(list(k) + list(s) + list(p)), "y": y, "R": r, "grad_x": grad_x}


def tokenizer_case(gen):
    x = torch.randn((2, 3, 32, 32), generator=gen).requires_grad_()
    w = (torch.randn((8, 3, 3, 3), generator=gen) * 0.3).requires_grad_()
    y = F.max_pool2d(F.relu(F.conv2d(x, w)), 3)
    r = weights_like(y, gen)
    grad_x, grad_w = torch.autograd.grad((y * r).sum(), [x, w])
    return "tokenizer_f32", {"x": x, "w": w, "y": y, "R": r, "grad_x": grad_x, "grad_w": grad_w}


def main():
    out = golden_out_dir(__doc__.split("\n")[0])
    gen = torch.Generator().manual_seed(20261126)
    tensors = {}
    cases = [conv_case(c, gen) for c in CONV_CASES] + [pool_case(c, gen) for c in POOL_CASES] + [tokenizer_case(gen)]
    for name, values in cases:
        for key, t in values.items():
            tensors[f"{name}.{key}"] = t
    meta = {"conv_cases": ",".join(c[0] for c in CONV_CASES), "pool_cases": ",".join(c[0] for c in POOL_CASES),
            "torch": torch.__version__}
    path = os.path.join(out, "conv.safetensors")
    write_safetensors(path, tensors, meta)
    print(f"wrote {path}: {len(tensors)} tensors")


if __name__ == "__main__":
    main()
