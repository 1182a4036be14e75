#!/usr/bin/python3
"""Writes the PyTorch golden file for the 2-layer transformer classifier test.

The model is written here from the formulas (not with nn.TransformerEncoderLayer) so that every
parameter name and layout matches posgrad's TransformerClassifier exactly:

  x      = token_embedding[tokens] + position_embedding[0..N-1]          [B, N, D]
  block  (pre-LN):  x = x + out_proj(MHA(norm1(x)));  x = x + ff(norm2(x))
         (post-LN): x = norm1(x + out_proj(MHA(x)));  x = norm2(x + ff(x))
  MHA    q,k,v = Linear(D, D) each, split into H heads of Dh = D/H; scores q k^T / sqrt(Dh),
         padded keys set to -inf, softmax over keys
  ff     fc2(act(fc1(x))), act = GELU (exact) or ReLU
  head   final_norm (pre-LN only), masked mean over non-padded tokens, Linear(D, C)
  loss   cross-entropy (mean over the batch)

The file (safetensors, written with json+struct only) holds: the inputs (tokens, pad_mask,
labels), every parameter (param.<name>), logits, loss, every parameter gradient (grad.<name>), and
the losses of 10 AdamW steps (adamw_losses), plus the config in the metadata.

Usage: /usr/bin/python3 tools/golden_transformer.py [--out tests/golden]
"""
import argparse
import json
import math
import os
import struct

import torch


def write_safetensors(path, tensors, metadata):
    """Minimal safetensors writer (format: u64 header size, JSON header, raw little-endian data)."""
    dtypes = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtypes[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def golden_out_dir(description):
    """The command line every golden script shares: --out DIR (default tests/golden), created;
    torch runs on one thread so the files do not depend on the machine's thread count."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "golden"))
    out = parser.parse_args().out
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    return out


class Classifier(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        V, N, D, H, F, L, C = (cfg[k] for k in ("vocab", "tokens", "width", "heads", "ff", "layers", "classes"))
        self.cfg = cfg
        self.token_embedding = torch.nn.Embedding(V, D)
        self.position_embedding = torch.nn.Embedding(N, D)
        self.blocks = torch.nn.ModuleList()
        for _ in range(L):
            b = torch.nn.Module()
            b.norm1 = torch.nn.LayerNorm(D)
            b.attn = torch.nn.Module()
            for p in ("q_proj", "k_proj", "v_proj", "out_proj"):
                setattr(b.attn, p, torch.nn.Linear(D, D))
            b.norm2 = torch.nn.LayerNorm(D)
            b.ff = torch.nn.Module()
            b.ff.fc1 = torch.nn.Linear(D, F)
            b.ff.fc2 = torch.nn.Linear(F, D)
            self.blocks.append(b)
        if cfg["pre_norm"]:
            self.final_norm = torch.nn.LayerNorm(D)
        self.head = torch.nn.Linear(D, C)
        # Non-trivial LayerNorm affine parameters, so their gradients are tested meaningfully.
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, torch.nn.LayerNorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.2, 0.2)

    def attention(self, a, x, pad_mask):
        B, N, D = x.shape
        H = self.cfg["heads"]
        Dh = D // H

        def heads(t):
            return t.view(B, N, H, Dh).permute(0, 2, 1, 3)  # [B, H, N, Dh]

        q, k, v = heads(a.q_proj(x)), heads(a.k_proj(x)), heads(a.v_proj(x))
        s = q @ k.transpose(-1, -2) / math.sqrt(Dh)  # [B, H, N, N]
        s = s.masked_fill(pad_mask[:, None, None, :] > 0, float("-inf"))
        p = torch.softmax(s, dim=-1)
        o = (p @ v).permute(0, 2, 1, 3).reshape(B, N, D)
        return a.out_proj(o)

    def ff(self, f, x):
        act = torch.nn.functional.gelu if self.cfg["activation"] == "gelu" else torch.relu
        return f.fc2(act(f.fc1(x)))

    def forward(self, tokens, pad_mask):
        B, N = tokens.shape
        x = self.token_embedding(tokens) + self.position_embedding(torch.arange(N, device=tokens.device))[None]
        for b in self.blocks:
            if self.cfg["pre_norm"]:
                x = x + self.attention(b.attn, b.norm1(x), pad_mask)
                x = x + self.ff(b.ff, b.norm2(x))
            else:
                x = b.norm1(x + self.attention(b.attn, x, pad_mask))
                x = b.norm2(x + self.ff(b.ff, x))
        if self.cfg["pre_norm"]:
            x = self.final_norm(x)
        keep = (1.0 - pad_mask)[:, :, None]  # [B, N, 1]
        pooled = (x * keep).sum(1) / keep.sum(1)
        return self.head(pooled)


def make_golden(cfg, seed, path):
    torch.manual_seed(seed)
    model = Classifier(cfg)
    B, N, V, C = cfg["batch"], cfg["tokens"], cfg["vocab"], cfg["classes"]
    tokens = torch.randint(0, V, (B, N))
    lengths = torch.randint(N // 2, N + 1, (B,))
    lengths[0] = N  # at least one unpadded row
    pad_mask = (torch.arange(N)[None, :] >= lengths[:, None]).float()
    labels = torch.randint(0, C, (B,))

    tensors = {"tokens": tokens, "pad_mask": pad_mask, "labels": labels}
    for name, p in model.named_parameters():
        tensors["param." + name] = p.detach().clone()

    logits = model(tokens, pad_mask)
    loss = torch.nn.functional.cross_entropy(logits, labels)
    loss.backward()
    tensors["logits"] = logits.detach()
    tensors["loss"] = loss.detach().reshape([])
    for name, p in model.named_parameters():
        tensors["grad." + name] = p.grad.detach().clone()

    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=cfg["weight_decay"])
    losses = []
    for _ in range(10):
        opt.zero_grad()
        step_loss = torch.nn.functional.cross_entropy(model(tokens, pad_mask), labels)
        step_loss.backward()
        opt.step()
        losses.append(step_loss.item())
    tensors["adamw_losses"] = torch.tensor(losses, dtype=torch.float32)
    write_safetensors(path, tensors, {"config": json.dumps(cfg), "seed": seed,
                                      "torch": torch.__version__,
                                      "generator": "tools/golden_transformer.py"})
    print(f"wrote {path}: loss {loss.item():.6f}, 10 AdamW losses {losses[0]:.4f} -> {losses[-1]:.4f}")


def main():
    out = golden_out_dir(__doc__.split("\n")[0])
    base = dict(vocab=11, tokens=8, width=16, heads=4, ff=32, layers=2, classes=3, batch=5,
                lr=1e-2, weight_decay=0.01)
    make_golden(dict(base, pre_norm=True, activation="gelu"), 0,
                os.path.join(out, "transformer_prenorm_gelu.safetensors"))
    make_golden(dict(base, pre_norm=False, activation="relu"), 1,
                os.path.join(out, "transformer_postnorm_relu.safetensors"))


if __name__ == "__main__":
    main()
