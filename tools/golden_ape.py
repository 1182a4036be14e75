#!/usr/bin/python3
"""Writes the PyTorch golden files for the algebraic positional encodings (ape, ape_grid, ape_tree).

Written from the formulas of the APE spec (sections 2-5), not from posgrad's code: the powers are
repeated products (posgrad doubles), tree maps are explicit per-token products over the branch
word (posgrad shares them per unique position and pads), distances come from the words directly.

One attention layer (width 16, 2 heads, Dh 8, float64), x [B, N, D]:

  q, k, v = Linear(D, D) each, heads contiguous: [B, N, H, Dh] -> [B, H, N, Dh]
  W_g     = matrix_exp(A_g - A_g^T)                  A = the parameter hooks.0.orthogonal.generators
  q~_t    = M_t q_t, k~_t = M_t k_t                  per token and head, values untouched
     sequence  M_t = W_h^t                            A [H, Dh, Dh]
     grid      M_t = W_{0,h}^{r_t} (+) W_{1,h}^{c_t}  A [2H, Dh/2, Dh/2], generator a*H + h; the first
                                                      Dh/2 features follow rows, the rest columns
     tree      M_t = W_{b1}^T ... W_{bt}^T over the word (b1..bt) of the token's heap position
               intended: heap p -> 0-indexed node p - 1; released: heap p -> node p; heap 0 -> I
               node n > 0: parent (n - 1) // kappa, branch (n - 1) % kappa
               per head A [kappa*H, Dh, Dh] (generator b*H + h), or shared A [kappa, Dh, Dh]
  s_ij    = (q~_i . k~_j / sqrt(Dh)) * decay^dist(i, j)
     sequence |i - j|; grid floor(sqrt(dr^2 + dc^2)); tree intended |u| + |v| - 2 lcp(u, v),
     tree released 2 (L - lcp of the words padded with kappa to L, the longest word of the batch)
  causal keys j > i -> -inf (sequence file only); p = softmax_j; out = out_proj(merge(p v))
  loss    = mean((out - target)^2)

Each file (tests/golden/ape_<kind>.safetensors) holds the inputs (input, target, heap for trees),
every parameter (param.<name>), output, loss, grad.input, every parameter gradient
(grad.<name>) and the losses of 3 AdamW steps (adamw_losses); the config is in the metadata.

Usage: /usr/bin/python3 tools/golden_ape.py [--out tests/golden]
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_transformer import golden_out_dir, write_safetensors  # noqa: E402  (the one minimal writer)


# ------------------------------------------------------------------ tree words and distances

def tree_word(heap, kappa, mapping):
    if heap == 0:
        return []
    node = heap - 1 if mapping == "intended" else heap
    word = []
    while node > 0:
        word.append((node - 1) % kappa)
        node = (node - 1) // kappa
    return word[::-1]


def lcp(u, v):
    n = 0
    while n < len(u) and n < len(v) and u[n] == v[n]:
        n += 1
    return n


def tree_distance_matrix(heap_rows, kappa, mapping, distance):
    words_all = [tree_word(p, kappa, mapping) for row in heap_rows for p in row]
    longest = max(len(w) for w in words_all)
    out = []
    for row in heap_rows:
        words = [tree_word(p, kappa, mapping) for p in row]
        m = []
        for u in words:
            line = []
            for v in words:
                if distance == "intended":
                    line.append(len(u) + len(v) - 2 * lcp(u, v))
                else:
                    pu = u + [kappa] * (longest - len(u))
                    pv = v + [kappa] * (longest - len(v))
                    line.append(2 * (longest - lcp(pu, pv)))
            m.append(line)
        out.append(m)
    return torch.tensor(out, dtype=torch.float64)  # [rows, N, N]


# ------------------------------------------------------------------ the attention layer

class ApeAttention(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        D, H = cfg["width"], cfg["heads"]
        Dh = D // H
        self.cfg = cfg
        for p in ("q_proj", "k_proj", "v_proj", "out_proj"):
            setattr(self, p, torch.nn.Linear(D, D))
        hook = torch.nn.Module()
        hook.orthogonal = torch.nn.Module()
        kind = cfg["kind"]
        if kind == "sequence":
            shape = (H, Dh, Dh)
        elif kind == "grid":
            shape = (2 * H, Dh // 2, Dh // 2)
        else:
            kappa = cfg["options"].get("branching", 2)
            shared = cfg["options"].get("shared_heads", "false") == "true"
            shape = (int(kappa) * (1 if shared else H), Dh, Dh)
        hook.orthogonal.generators = torch.nn.Parameter(0.4 * torch.randn(shape))
        self.hooks = torch.nn.ModuleList([hook])

    def orthogonal(self):
        a = self.hooks[0].orthogonal.generators
        return torch.matrix_exp(a - a.transpose(-1, -2))

    def token_maps(self, N):
        """Per-token maps and the decay distances: maps [B|1, H|1, N, Dh, Dh], dist [B|1, N, N]."""
        cfg = self.cfg
        H, Dh = cfg["heads"], cfg["width"] // cfg["heads"]
        W = self.orthogonal()
        eye = torch.eye(Dh)
        if cfg["kind"] == "sequence":
            maps, p = [], eye.expand(H, Dh, Dh)
            for t in range(N):
                maps.append(p)
                p = p @ W  # W^(t+1)
            maps = torch.stack(maps, 1)[None]  # [1, H, N, Dh, Dh]
            i = torch.arange(N, dtype=torch.float64)
            return maps, (i[None, :] - i[:, None]).abs()[None]
        if cfg["kind"] == "grid":
            rows, cols = cfg["structure"]
            d = Dh // 2
            Wr, Wc = W[:H], W[H:]  # [H, d, d] each
            powers = lambda w, n: [torch.linalg.matrix_power(w, e) for e in range(n)]
            pr, pc = powers(Wr, rows), powers(Wc, cols)
            maps = []
            for t in range(N):
                r, c = divmod(t, cols)
                m = torch.zeros(H, Dh, Dh)
                m[:, :d, :d] = pr[r]
                m[:, d:, d:] = pc[c]
                maps.append(m)
            maps = torch.stack(maps, 1)[None]  # [1, H, N, Dh, Dh]
            coord = [divmod(t, cols) for t in range(N)]
            dist = [[math.isqrt((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2) for b in coord] for a in coord]
            return maps, torch.tensor(dist, dtype=torch.float64)[None]
        # trees
        opts = cfg["options"]
        kappa = int(opts.get("branching", 2))
        mapping = opts.get("mapping", "intended")
        shared = opts.get("shared_heads", "false") == "true"
        Hs = 1 if shared else H
        Wb = W.reshape(kappa, Hs, Dh, Dh)
        heap = cfg["heap"]
        rows = heap if isinstance(heap[0], list) else [heap]
        all_maps = []
        for row in rows:
            row_maps = []
            for p in row:
                m = eye.expand(Hs, Dh, Dh)
                for b in tree_word(p, kappa, mapping):
                    m = m @ Wb[b].transpose(-1, -2)
                row_maps.append(m)
            all_maps.append(torch.stack(row_maps, 1))  # [Hs, N, Dh, Dh]
        maps = torch.stack(all_maps, 0)  # [B|1, Hs, N, Dh, Dh]
        return maps, tree_distance_matrix(rows, kappa, mapping, opts.get("decay_distance", "intended"))

    def forward(self, x):
        cfg = self.cfg
        B, N, D = x.shape
        H = cfg["heads"]
        Dh = D // H
        heads = lambda t: t.view(B, N, H, Dh).permute(0, 2, 1, 3)
        q, k, v = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        maps, dist = self.token_maps(N)
        q = (maps @ q[..., None])[..., 0]
        k = (maps @ k[..., None])[..., 0]
        s = q @ k.transpose(-1, -2) / math.sqrt(Dh)  # [B, H, N, N]
        s = s * (cfg["decay"] ** dist)[:, None]
        if cfg["causal"]:
            s = s.masked_fill(torch.ones(N, N).triu(1) > 0, float("-inf"))
        p = torch.softmax(s, -1)
        return self.out_proj((p @ v).permute(0, 2, 1, 3).reshape(B, N, D))


def make_golden(cfg, seed, path):
    torch.manual_seed(seed)
    model = ApeAttention(cfg)
    B, N, D = cfg["batch"], cfg["tokens"], cfg["width"]
    x = torch.randn(B, N, D, requires_grad=True)
    target = torch.randn(B, N, D)
    tensors = {"input": x.detach().clone(), "target": target}
    if "heap" in cfg:
        tensors["heap"] = torch.tensor(cfg["heap"], dtype=torch.int64)
    for name, p in model.named_parameters():
        tensors["param." + name] = p.detach().clone()

    out = model(x)
    loss = ((out - target) ** 2).mean()
    loss.backward()
    tensors["output"] = out.detach()
    tensors["loss"] = loss.detach().reshape([])
    tensors["grad.input"] = x.grad.detach().clone()
    for name, p in model.named_parameters():
        tensors["grad." + name] = p.grad.detach().clone()

    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=cfg["weight_decay"])
    xs = x.detach()
    losses = []
    for _ in range(3):
        opt.zero_grad()
        step_loss = ((model(xs) - target) ** 2).mean()
        step_loss.backward()
        opt.step()
        losses.append(step_loss.item())
    tensors["adamw_losses"] = torch.tensor(losses, dtype=torch.float64)
    write_safetensors(path, tensors, {"config": json.dumps(cfg), "seed": seed, "torch": torch.__version__,
                                      "generator": "tools/golden_ape.py"})
    print(f"wrote {path}: loss {loss.item():.8f}, AdamW losses {', '.join(f'{l:.8f}' for l in losses)}")


def main():
    out = golden_out_dir(__doc__.split("\n")[0])
    torch.set_default_dtype(torch.float64)
    base = dict(width=16, heads=2, batch=2, decay=0.9, lr=1e-2, weight_decay=0.01, causal=False)
    tree_heap = [[1, 2, 3, 4, 5, 6, 7], [0, 1, 3, 6, 7, 14, 13]]
    cases = {
        "sequence": dict(base, kind="sequence", hook="ape", tokens=7, causal=True,
                         options={"decay": "0.9", "init": "normal"}),
        "grid": dict(base, kind="grid", hook="ape_grid", tokens=9, structure=[3, 3],
                     options={"decay": "0.9", "init": "normal", "axes": "2"}),
        "tree": dict(base, kind="tree", hook="ape_tree", tokens=7, heap=tree_heap,
                     options={"decay": "0.9", "init": "normal"}),
        "tree_released": dict(base, kind="tree", hook="ape_tree", tokens=7, heap=[0, 1, 2, 3, 4, 7, 9],
                              options={"decay": "0.9", "init": "normal", "mapping": "released",
                                       "decay_distance": "released", "shared_heads": "true"}),
    }
    for seed, (name, cfg) in enumerate(cases.items()):
        make_golden(cfg, 10 + seed, os.path.join(out, f"ape_{name}.safetensors"))


if __name__ == "__main__":
    main()
