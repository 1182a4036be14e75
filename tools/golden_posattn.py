#!/usr/bin/python3
"""Writes the PyTorch golden files for the posattn classifier tests (tests/attention/test_posattn_golden.cpp).

The model is written here in plain torch from the formulas of the posattn spec (posattn.md
sections 2-6 and 8.1, outside this repository: see docs/design.md, "Specs cited in the code"),
not from posgrad's code:

  x [B, S0, S1, C] -> [B, N, C] row-major -> input_proj Linear(C, D)
  block (post-LN):  x = norm1(x + attention(x));  x = norm2(x + fc2(relu(fc1(x))))
  attention (V1 layout, Formula 1), per head h, query i, key j:
      E      = encoder(relative grid)                                   [R, D], split head-major
      P[i,j] = E[key - query]  (built with unfold + flip of the query dims, spec section 2)
      A_ij   = q_i.k_j + u_h.k_j + q_i.P_ij + v_h.P_ij
      span:  A_ij *= G*[i,j],  G(x) = exp(-1/2 sum_d x_d^2 / sigma_d^2)   (all_logits)
      A_ij  /= sqrt(Dh)
      box:   -inf where |j_d - i_d| > half_d = ceil(sqrt(-2 ln t) |sigma_d| (S_d - 1)) for some d
      out    = softmax_j(A) v, heads merged, out_proj
  encoders:  siren         3-layer SIREN on the normalised grid (sin(omega z) after the first two)
             txl_baseline  interleaved sin/cos of indices 0..2N-2, width `hidden`, Linear(hidden, D)
             transformer_xl  concatenated [sin | cos] of the distance i - j (width D), W_kR (no bias)
  absolute schemes (no relative encoding, no u/v: A_ij = q_i.k_j / sqrt(Dh)), added once to the
  tokens after input_proj, unscaled, at the row-major token index p (ape.md section 6, the image
  rows "Sinusoidal 2D" and "Absolute"):
             sinusoidal        pe[p, 2i] = sin(p 10000^(-2i/D)), pe[p, 2i+1] = cos(p 10000^(-2i/D))
             learned_absolute  x + E[min(p, P-1)], E [P, D] ~ N(0, 1), P = N (param absolute.weight)
  pooling:   last token;  head: Linear(D, Ho) -> LayerNorm -> ReLU -> Linear(Ho, classes)
  loss:      cross-entropy (mean over the batch)

Each file (safetensors, float64, written with json+struct only) holds the input images and
labels, every parameter (param.<name>, posgrad's names), logits, loss, every parameter gradient
(grad.<name>) and the losses of 3 Adam steps (adam_losses), with the config in the metadata.
Dropout is 0 (masks cannot match across frameworks).

Usage: /usr/bin/python3 tools/golden_posattn.py [--out tests/golden]
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_transformer import golden_out_dir, write_safetensors  # noqa: E402  (the one minimal writer)


def relative_grid(structure):
    """Normalised relative coordinates: [2S_0-1, ..., 2S_{n-1}-1, n], each axis linspace(-1, 1)."""
    axes = [torch.linspace(-1.0, 1.0, 2 * s - 1, dtype=torch.float64) for s in structure]
    mesh = torch.meshgrid(*axes, indexing="ij")
    return torch.stack(mesh, dim=-1)


def relative_unfold(table, structure):
    """table [2S_0-1, ..., 2S_{n-1}-1, F...] -> [N, N, F...] with out[i, j] = table[key j - query i + S - 1].

    Unfold windows of size S along each relative axis (window a, element w = table[a + w]), then
    flip the window (query) axes: out[i, j] = table[(S - 1 - i) + j].
    """
    n = len(structure)
    t = table
    for d, s in enumerate(structure):
        t = t.unfold(d, s, 1)  # axis d -> windows (query), new last axis -> elements (key)
    # t: [S_0, ..., S_{n-1}, F..., S_0, ..., S_{n-1}]: move the key axes right after the query axes
    feat = t.dim() - 2 * n
    t = t.permute(*range(n), *range(n + feat, 2 * n + feat), *range(n, n + feat))
    t = t.flip(dims=list(range(n)))
    N = math.prod(structure)
    return t.reshape(N, N, *t.shape[2 * n:])


class Siren(torch.nn.Module):
    def __init__(self, n_in, hidden, n_out, layers, omega):
        super().__init__()
        self.omega = omega
        sizes = [n_in] + [hidden] * (layers - 1) + [n_out]
        self.layers = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        with torch.no_grad():
            for i, lin in enumerate(self.layers):
                fan_in = lin.weight.shape[1]
                if i == len(self.layers) - 1:
                    bound = math.sqrt(3.0 / fan_in)
                elif i == 0:
                    bound = 1.0 / fan_in
                else:
                    bound = math.sqrt(6.0 / fan_in) / omega
                lin.weight.uniform_(-bound, bound)
                lin.bias.uniform_(-0.1, 0.1)  # posattn starts at 0; non-zero here so biases are tested

    def forward(self, x):
        for i, lin in enumerate(self.layers):
            x = lin(x)
            if i + 1 < len(self.layers):
                x = torch.sin(self.omega * x)
        return x


class Baseline(torch.nn.Module):
    """posattn's baseline: interleaved sinusoids of indices 0..2N-2 (width `hidden`), then Linear."""

    def __init__(self, hidden, width):
        super().__init__()
        self.hidden = hidden
        self.proj = torch.nn.Linear(hidden, width)

    def forward(self, structure):
        (S,) = structure
        r = torch.arange(2 * S - 1, dtype=torch.float64)[:, None]
        m = torch.arange(self.hidden // 2, dtype=torch.float64)[None, :]
        angle = r * torch.pow(torch.tensor(10000.0, dtype=torch.float64), -2.0 * m / self.hidden)
        s = torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).reshape(2 * S - 1, self.hidden)
        return self.proj(s.to(self.proj.weight.dtype))


class TxlStandard(torch.nn.Module):
    """Standard Transformer-XL: concatenated [sin | cos] of the distance i - j (width D), then W_kR (no bias).
    Entry r of the relative grid is the offset o = r - (N-1) = key - query, so the distance is -o."""

    def __init__(self, width):
        super().__init__()
        self.width = width
        self.w_kr = torch.nn.Linear(width, width, bias=False)

    def forward(self, structure):
        (S,) = structure
        distance = -(torch.arange(2 * S - 1, dtype=torch.float64) - (S - 1))[:, None]
        k = torch.arange(self.width // 2, dtype=torch.float64)[None, :]
        angle = distance * torch.pow(torch.tensor(10000.0, dtype=torch.float64), -2.0 * k / self.width)
        return self.w_kr(torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1).to(self.w_kr.weight.dtype))


class Sinusoidal(torch.nn.Module):
    """Vaswani's fixed table at the token index; no parameters."""

    def __init__(self, width):
        super().__init__()
        self.width = width

    def forward(self, x):  # [B, N, D] -> x + pe
        N = x.shape[1]
        p = torch.arange(N, dtype=torch.float64)[:, None]
        pe = torch.zeros(N, self.width, dtype=torch.float64)
        for i in range((self.width + 1) // 2):
            angle = p[:, 0] * 10000.0 ** (-2.0 * i / self.width)
            pe[:, 2 * i] = torch.sin(angle)
            if 2 * i + 1 < self.width:
                pe[:, 2 * i + 1] = torch.cos(angle)
        return x + pe.to(x.dtype)[None]


class LearnedAbsolute(torch.nn.Module):
    """A learned table E [P, D] ~ N(0, 1), read at min(p, P - 1)."""

    def __init__(self, positions, width):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(positions, width))

    def forward(self, x):
        p = torch.clamp(torch.arange(x.shape[1]), max=self.weight.shape[0] - 1)
        return x + self.weight[p][None]


ABSOLUTE = ("sinusoidal", "learned_absolute")


class Model(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        C, D, H, F, L, Ho, K = (cfg[k] for k in ("input_dim", "width", "heads", "ff", "layers", "out_hidden", "classes"))
        Dh = D // H
        n = cfg["dims"]
        self.input_proj = torch.nn.Linear(C, D)
        self.absolute = None
        if cfg["positional"] == "sinusoidal":
            self.absolute = Sinusoidal(D)
        elif cfg["positional"] == "learned_absolute":
            self.absolute = LearnedAbsolute(math.prod(cfg["image"]), D)
        if self.absolute is not None and cfg["span"]:
            raise ValueError("this twin has no span with an absolute scheme")
        self.blocks = torch.nn.ModuleList()
        for layer in range(L):
            b = torch.nn.Module()
            b.norm1 = torch.nn.LayerNorm(D)
            b.attn = torch.nn.Module()
            for p in ("q_proj", "k_proj", "v_proj", "out_proj"):
                setattr(b.attn, p, torch.nn.Linear(D, D))
            bound = math.sqrt(6.0 / (D + 3 * D))  # xavier over the fused [3D, D] qkv matrix
            with torch.no_grad():
                for p in ("q_proj", "k_proj", "v_proj"):
                    getattr(b.attn, p).weight.uniform_(-bound, bound)
                    getattr(b.attn, p).bias.uniform_(-0.1, 0.1)
                torch.nn.init.xavier_uniform_(b.attn.out_proj.weight)
            if self.absolute is not None:  # the scheme is the model's; attention has no hooks
                b.norm2 = torch.nn.LayerNorm(D)
                b.ff = torch.nn.Module()
                b.ff.fc1 = torch.nn.Linear(D, F)
                b.ff.fc2 = torch.nn.Linear(F, D)
                self.blocks.append(b)
                continue
            hooks = torch.nn.ModuleList()
            pe = torch.nn.Module()
            uv = math.sqrt(6.0 / (2 * Dh))
            pe.u = torch.nn.Parameter(torch.empty(H, Dh).uniform_(-uv, uv))
            pe.v = torch.nn.Parameter(torch.empty(H, Dh).uniform_(-uv, uv))
            if cfg["positional"] == "siren":
                pe.siren = Siren(n, cfg["pe_hidden"], D, cfg["pe_layers"], cfg["omega"])
            elif cfg["positional"] == "transformer_xl":
                pe.enc = TxlStandard(D)
            else:
                pe.enc = Baseline(cfg["pe_hidden"], D)
            hooks.append(pe)
            if cfg["span"]:
                span = torch.nn.Module()
                span.sigma = torch.nn.Parameter(torch.tensor(cfg["sigmas"][layer], dtype=torch.float64))
                hooks.append(span)
            b.attn.hooks = hooks
            b.norm2 = torch.nn.LayerNorm(D)
            b.ff = torch.nn.Module()
            b.ff.fc1 = torch.nn.Linear(D, F)
            b.ff.fc2 = torch.nn.Linear(F, D)
            self.blocks.append(b)
        self.output_fc1 = torch.nn.Linear(D, Ho)
        self.output_norm = torch.nn.LayerNorm(Ho)
        self.output_fc2 = torch.nn.Linear(Ho, K)
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, torch.nn.LayerNorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.2, 0.2)

    def structure(self, spatial):
        return [math.prod(spatial)] if self.cfg["dims"] == 1 else list(spatial)

    def attention(self, b, x, structure):
        B, N, D = x.shape
        H = self.cfg["heads"]
        Dh = D // H
        a = b.attn

        def heads(t):
            return t.view(B, N, H, Dh).permute(0, 2, 1, 3)  # [B, H, N, Dh]

        q, k, v = heads(a.q_proj(x)), heads(a.k_proj(x)), heads(a.v_proj(x))
        if self.absolute is not None:
            p = torch.softmax(torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(Dh), dim=-1)
            return a.out_proj((p @ v).permute(0, 2, 1, 3).reshape(B, N, D))
        pe = a.hooks[0]
        if self.cfg["positional"] == "siren":
            grid = relative_grid(structure).to(x.dtype)  # [2S-1..., n]
            E = pe.siren(grid)                           # [2S-1..., D]
        else:
            E = pe.enc(structure)                        # [2N-1, D]
        E = E.reshape(*[2 * s - 1 for s in structure], H, Dh)
        P = relative_unfold(E, structure)                # [N, N, H, Dh]
        A = (torch.einsum("bhid,bhjd->bhij", q, k)
             + torch.einsum("hd,bhjd->bhj", pe.u, k)[:, :, None, :]
             + torch.einsum("bhid,ijhd->bhij", q, P)
             + torch.einsum("hd,ijhd->hij", pe.v, P)[None])
        if self.cfg["span"]:
            sigma = a.hooks[1].sigma
            xg = relative_grid(structure).to(x.dtype)    # [2S-1..., n]
            G = torch.exp(-0.5 * (xg ** 2 / sigma ** 2).sum(-1))
            A = A * relative_unfold(G, structure)[None, None]
        A = A / math.sqrt(Dh)
        if self.cfg["span"] and self.cfg["threshold"] > 0:
            t = self.cfg["threshold"]
            sig = a.hooks[1].sigma.detach().abs().tolist()
            halves = [min(s - 1, math.ceil(math.sqrt(-2 * math.log(t)) * sg * (s - 1))) for s, sg in zip(structure, sig)]
            coords = torch.stack(torch.meshgrid(*[torch.arange(s) for s in structure], indexing="ij"), -1).reshape(N, -1)
            diff = (coords[None, :, :] - coords[:, None, :]).abs()  # [N(query), N(key), n]
            allowed = (diff <= torch.tensor(halves)).all(-1)
            A = A.masked_fill(~allowed, float("-inf"))
        p = torch.softmax(A, dim=-1)
        o = (p @ v).permute(0, 2, 1, 3).reshape(B, N, D)
        return a.out_proj(o)

    def forward(self, images):
        B, C = images.shape[0], images.shape[-1]
        structure = self.structure(images.shape[1:-1])
        x = self.input_proj(images.reshape(B, -1, C))
        if self.absolute is not None:
            x = self.absolute(x)
        for b in self.blocks:
            x = b.norm1(x + self.attention(b, x, structure))
            x = b.norm2(x + b.ff.fc2(torch.relu(b.ff.fc1(x))))
        pooled = x[:, -1]
        return self.output_fc2(torch.relu(self.output_norm(self.output_fc1(pooled))))


def posgrad_name(name, cfg):
    """Python parameter names -> posgrad's (the hook modules are named as posgrad registers them)."""
    name = name.replace(".hooks.0.enc.", ".hooks.0.")
    return name


def make_golden(cfg, seed, path):
    torch.manual_seed(seed)
    torch.set_default_dtype(torch.float64)
    model = Model(cfg)
    B = cfg["batch"]
    images = torch.empty(B, *cfg["image"], cfg["input_dim"]).uniform_(-1, 1)
    labels = torch.randint(0, cfg["classes"], (B,))

    tensors = {"images": images, "labels": labels}
    for name, p in model.named_parameters():
        tensors["param." + posgrad_name(name, cfg)] = p.detach().clone()

    logits = model(images)
    loss = torch.nn.functional.cross_entropy(logits, labels)
    loss.backward()
    tensors["logits"] = logits.detach()
    tensors["loss"] = loss.detach().reshape([])
    for name, p in model.named_parameters():
        tensors["grad." + posgrad_name(name, cfg)] = p.grad.detach().clone()

    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"], betas=(0.9, 0.999), eps=1e-8)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        step_loss = torch.nn.functional.cross_entropy(model(images), labels)
        step_loss.backward()
        opt.step()
        losses.append(step_loss.item())
    tensors["adam_losses"] = torch.tensor(losses, dtype=torch.float64)
    if cfg["span"]:
        tensors["sigma_after"] = torch.stack([b.attn.hooks[1].sigma.detach() for b in model.blocks])
    write_safetensors(path, tensors, {"config": json.dumps(cfg), "seed": seed, "torch": torch.__version__,
                                      "generator": "tools/golden_posattn.py"})
    print(f"wrote {path}: loss {loss.item():.6f}, 3 Adam losses {', '.join(f'{l:.6f}' for l in losses)}")


def main():
    out = golden_out_dir(__doc__.split("\n")[0])
    base = dict(input_dim=3, image=[8, 8], width=16, heads=2, layers=2, ff=32, out_hidden=16, classes=10,
                batch=4, lr=1e-2, pe_hidden=16, pe_layers=3, omega=10.0, threshold=0.1)
    # 1-D: N = 64, half = ceil(2.146 * sigma * 63): 41 (sigma 0.3) and 34 (0.25).
    make_golden(dict(base, dims=1, positional="siren", span=True, sigmas=[[0.3], [0.25]]), 10,
                os.path.join(out, "posattn_siren1d_span.safetensors"))
    # 2-D 8x8: half = ceil(2.146 * sigma * 7): 5 (0.3), 4 (0.22), 4 (0.25), 3 (0.2).
    make_golden(dict(base, dims=2, positional="siren", span=True, sigmas=[[0.3, 0.22], [0.25, 0.2]]), 11,
                os.path.join(out, "posattn_siren2d_span.safetensors"))
    make_golden(dict(base, dims=1, positional="txl_baseline", span=False, sigmas=[]), 12,
                os.path.join(out, "posattn_baseline.safetensors"))
    # Standard Transformer-XL relative attention (u, v, W_kR, sinusoid of i - j) with the span.
    make_golden(dict(base, dims=1, positional="transformer_xl", span=True, sigmas=[[0.3], [0.25]]), 13,
                os.path.join(out, "posattn_txl_span.safetensors"))
    # The absolute schemes, added to the tokens: the sinusoid on the 1-D sequence of 64 tokens, the
    # learned table (P = 64) on the 8x8 grid (both read the row-major index).
    make_golden(dict(base, dims=1, positional="sinusoidal", span=False, sigmas=[]), 14,
                os.path.join(out, "posattn_sinusoidal.safetensors"))
    make_golden(dict(base, dims=2, positional="learned_absolute", span=False, sigmas=[]), 15,
                os.path.join(out, "posattn_learned_absolute.safetensors"))


if __name__ == "__main__":
    main()
