#!/usr/bin/python3
"""Writes the PyTorch golden files for posgrad's CCT model (apps/cct/cct_model.h).

A PyTorch twin of the model at a small size (12 x 12 images, conv 3x3 -> 10 x 10, max_pool 3
-> 3 x 3 = 9 tokens, width 16, 2 heads, 2 layers, FFN 32), in float64, without dropout or
DropPath (so the numbers are deterministic), one file per positional scheme:

  cct_sinusoidal        1-D sinusoid over the flat token index (APE's "Sinusoidal 2D")
  cct_sinusoidal_2d     the true 2-D sinusoid (rows on the first D/2 features, columns on the rest)
  cct_learned_absolute  a learned [N, D] table
  cct_ape_grid          grid APE: per head, exp(A - A^T) powers on the two halves of Dh, decay 0.98^floor(|offset|)
  cct_ape               sequence APE over the flat index, decay 0.98^|j - i|
  cct_ape_grid_prenorm  grid APE with pre-LN blocks and a final LayerNorm

Each file holds images [B, 3, 12, 12], labels, every parameter ("param.<posgrad name>"), the
logits, the loss (cross-entropy with label smoothing 0.1, the CCT recipe), every gradient
("grad.<name>"), and the losses of 3 AdamW steps (lr 1e-3, weight decay 0.03).

Usage: /usr/bin/python3 tools/golden_cct.py [--out tests/golden]
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # importing the sibling script must not leave tools/__pycache__
from golden_transformer import golden_out_dir, write_safetensors  # noqa: E402

BASE = dict(image=12, channels=3, classes=10, width=16, heads=2, layers=2, ff=32, conv_kernel=3, pool_kernel=3,
            batch=3, pre_norm=False, decay=0.98, lr=1e-3, weight_decay=0.03, smoothing=0.1)
CASES = [("cct_sinusoidal", "sinusoidal", {}), ("cct_sinusoidal_2d", "sinusoidal_2d", {}),
         ("cct_learned_absolute", "learned_absolute", {}), ("cct_ape_grid", "ape_grid", {}),
         ("cct_ape", "ape", {}), ("cct_ape_grid_prenorm", "ape_grid", {"pre_norm": True})]


def sinusoid(positions, width):
    pe = torch.zeros(len(positions), width)
    for t, p in enumerate(positions):
        for c in range(width):
            angle = p * 10000.0 ** (-2.0 * (c // 2) / width)
            pe[t, c] = math.sin(angle) if c % 2 == 0 else math.cos(angle)
    return pe


class Positional(torch.nn.Module):
    """The scheme: an additive table (absolute) or per-token maps and a decay (APE)."""

    def __init__(self, cfg, scheme, grid):
        super().__init__()
        self.scheme, self.grid, self.cfg = scheme, grid, cfg
        D, H = cfg["width"], cfg["heads"]
        Dh, N = D // H, grid[0] * grid[1]
        if scheme == "learned_absolute":
            self.weight = torch.nn.Parameter(torch.randn(N, D))
        elif scheme.startswith("ape"):
            self.orthogonal = torch.nn.Module()
            shape = (2 * H, Dh // 2, Dh // 2) if scheme == "ape_grid" else (H, Dh, Dh)
            self.orthogonal.generators = torch.nn.Parameter(0.4 * torch.randn(shape))

    def table(self):
        rows, cols = self.grid
        D = self.cfg["width"]
        if self.scheme == "sinusoidal":
            return sinusoid(range(rows * cols), D)
        if self.scheme == "sinusoidal_2d":
            r = sinusoid([t // cols for t in range(rows * cols)], D // 2)
            c = sinusoid([t % cols for t in range(rows * cols)], D // 2)
            return torch.cat([r, c], 1)
        return self.weight

    def maps(self):
        """maps [H, N, Dh, Dh] and the decay factors [N, N]."""
        H = self.cfg["heads"]
        Dh = self.cfg["width"] // H
        rows, cols = self.grid
        N = rows * cols
        a = self.orthogonal.generators
        w = torch.matrix_exp(a - a.transpose(-1, -2))
        if self.scheme == "ape":
            maps, p = [], torch.eye(Dh).expand(H, Dh, Dh)
            for _ in range(N):
                maps.append(p)
                p = p @ w
            i = torch.arange(N, dtype=torch.float64)
            dist = (i[None, :] - i[:, None]).abs()
            return torch.stack(maps, 1), self.cfg["decay"] ** dist
        d = Dh // 2
        maps = []
        for t in range(N):
            r, c = divmod(t, cols)
            m = torch.zeros(H, Dh, Dh)
            m[:, :d, :d] = torch.linalg.matrix_power(w[:H], r)
            m[:, d:, d:] = torch.linalg.matrix_power(w[H:], c)
            maps.append(m)
        coord = [divmod(t, cols) for t in range(N)]
        dist = torch.tensor([[math.isqrt((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2) for q in coord] for p in coord],
                            dtype=torch.float64)
        return torch.stack(maps, 1), self.cfg["decay"] ** dist


class Attention(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        D = cfg["width"]
        self.cfg = cfg
        for p in ("q_proj", "k_proj", "v_proj", "out_proj"):
            setattr(self, p, torch.nn.Linear(D, D))

    def forward(self, x, ape):
        B, N, D = x.shape
        H = self.cfg["heads"]
        Dh = D // H
        heads = lambda t: t.view(B, N, H, Dh).permute(0, 2, 1, 3)
        q, k, v = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        s_scale = None
        if ape is not None:
            maps, decay = ape
            q = (maps[None] @ q[..., None])[..., 0]
            k = (maps[None] @ k[..., None])[..., 0]
            s_scale = decay
        s = q @ k.transpose(-1, -2) / math.sqrt(Dh)
        if s_scale is not None:
            s = s * s_scale
        p = torch.softmax(s, -1)
        return self.out_proj((p @ v).permute(0, 2, 1, 3).reshape(B, N, D))


class FeedForward(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc1 = torch.nn.Linear(cfg["width"], cfg["ff"])
        self.fc2 = torch.nn.Linear(cfg["ff"], cfg["width"])

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Block(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.pre_norm = cfg["pre_norm"]
        self.norm1 = torch.nn.LayerNorm(cfg["width"])
        self.attn = Attention(cfg)
        self.norm2 = torch.nn.LayerNorm(cfg["width"])
        self.ff = FeedForward(cfg)

    def forward(self, x, ape):
        if self.pre_norm:
            x = x + self.attn(self.norm1(x), ape)
            return x + self.ff(self.norm2(x))
        x = self.norm1(x + self.attn(x, ape))
        return self.norm2(x + self.ff(x))


class Cct(torch.nn.Module):
    def __init__(self, cfg, scheme):
        super().__init__()
        D = cfg["width"]
        side = (cfg["image"] - cfg["conv_kernel"] + 1) // cfg["pool_kernel"]
        self.grid = (side, side)
        self.cfg, self.scheme = cfg, scheme
        self.tokenizer_conv = torch.nn.Conv2d(cfg["channels"], D, cfg["conv_kernel"], bias=False)
        self.positional = Positional(cfg, scheme, self.grid)
        self.blocks = torch.nn.ModuleList([Block(cfg) for _ in range(cfg["layers"])])
        if cfg["pre_norm"]:
            self.final_norm = torch.nn.LayerNorm(D)
        self.pool = torch.nn.Module()
        self.pool.attention_pool = torch.nn.Linear(D, 1)
        self.head = torch.nn.Linear(D, cfg["classes"])
        for m in self.modules():  # random LayerNorm affine parameters, so their gradients are checked
            if isinstance(m, torch.nn.LayerNorm):
                torch.nn.init.normal_(m.weight, 1.0, 0.1)
                torch.nn.init.normal_(m.bias, 0.0, 0.1)

    def forward(self, images):
        B = images.shape[0]
        t = F.max_pool2d(F.relu(self.tokenizer_conv(images)), self.cfg["pool_kernel"])
        h = t.reshape(B, self.cfg["width"], -1).transpose(1, 2)
        ape = None
        if self.scheme.startswith("ape"):
            ape = self.positional.maps()
        else:
            h = h + self.positional.table()[None]
        for block in self.blocks:
            h = block(h, ape)
        if self.cfg["pre_norm"]:
            h = self.final_norm(h)
        a = torch.softmax(self.pool.attention_pool(h), 1)  # [B, N, 1]
        return self.head((a.transpose(1, 2) @ h)[:, 0])


def make_golden(cfg, scheme, seed, path):
    torch.manual_seed(seed)
    torch.set_default_dtype(torch.float64)
    model = Cct(cfg, scheme)
    images = torch.randn(cfg["batch"], cfg["channels"], cfg["image"], cfg["image"])
    labels = torch.randint(0, cfg["classes"], (cfg["batch"],))
    tensors = {"images": images, "labels": labels}
    for name, p in model.named_parameters():
        tensors["param." + name] = p.detach().clone()
    loss_of = lambda: F.cross_entropy(model(images), labels, label_smoothing=cfg["smoothing"])
    logits = model(images)
    loss = F.cross_entropy(logits, labels, label_smoothing=cfg["smoothing"])
    loss.backward()
    tensors["logits"] = logits.detach()
    tensors["loss"] = loss.detach().reshape([])
    for name, p in model.named_parameters():
        tensors["grad." + name] = p.grad.detach().clone()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    losses = []
    for _ in range(3):
        opt.zero_grad()
        step_loss = loss_of()
        step_loss.backward()
        opt.step()
        losses.append(step_loss.item())
    tensors["adamw_losses"] = torch.tensor(losses)
    cfg = dict(cfg, scheme=scheme)
    write_safetensors(path, tensors, {"config": json.dumps(cfg), "seed": seed, "torch": torch.__version__,
                                      "generator": "tools/golden_cct.py"})
    print(f"wrote {path}: loss {loss.item():.8f}, AdamW losses {', '.join(f'{l:.8f}' for l in losses)}")


def main():
    out = golden_out_dir(__doc__.split("\n")[0])
    for i, (name, scheme, extra) in enumerate(CASES):
        make_golden(dict(BASE, **extra), scheme, 100 + i, os.path.join(out, name + ".safetensors"))


if __name__ == "__main__":
    main()
