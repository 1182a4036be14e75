#!/usr/bin/python3
"""Writes the PyTorch golden files for the encoder-decoder of the APE transduction tasks.

Written from the formulas of the APE spec (sections 3, 5, 6, 7 and 10), not from posgrad's code,
for the C++ model of issue 26 to be compared with: a 1 + 1 layer encoder-decoder, float64, no
dropout (dropout is random: a golden file checks the deterministic model).

  embed(ids)   = E[ids] * sqrt(D)          E [V, D], tied: the encoder's and the decoder's input
                 embedding and the output head (logits = x E^T, no bias). Optional
                 scale_grad_by_freq (the released InvertibleEmbedding): the gradient one lookup
                 sends to row r is divided by how often r occurs in that lookup's ids (the whole
                 [B, N] source, or the whole [B, T] decoder input, padding token 0 included).
  sinusoidal   x = embed(ids) + pe[p], pe[p, 2i] = sin(p 10000^(-2i/D)), pe[p, 2i+1] = cos(same),
                 p = 0, 1, ... on both sides; attention without positional terms and no decay.
  ape          W_g = matrix_exp(A_g - A_g^T), A = positional.generators; per-token maps computed
                 ONCE per forward and shared by every layer and by encoder-self, decoder-self and
                 cross attention; q~ = M(p_q) q, k~ = M(p_k) k (values untouched);
                 logit = (q~ . k~ / sqrt(Dh)) * decay^dist(p_q, p_k)
     sequence  A [H, Dh, Dh] (generator h for head h), M(p) = W_h^p with p = 0, 1, ... on each
               side (SOS at 0), dist = |p_q - p_k| (cross attention: target index vs source index)
     tree      A [kappa*H, Dh, Dh] (generator b*H + h), heap positions (root 1, children 2p, 2p+1;
               0 = SOS / padding = the empty word); the intended mapping of spec 5: heap p is the
               0-indexed node p - 1, whose word (b_1 .. b_t) gives M = W_{b_1}^T ... W_{b_t}^T;
               dist = |u| + |v| - 2 lcp(u, v)
  attention    q, k, v, out = Linear(D, D) each (with bias); heads contiguous: feature f belongs to
               head f // Dh (posgrad's layout, not the released interleaving, spec 3.4);
               masked logits -> -inf (True / 1 = may attend), softmax over keys
     encoder self    keys masked by source_mask [B, N]
     decoder self    decoder_mask [B, T, T] (causal; the tree tasks' traversal-derived mask)
     cross           queries: decoder states, keys and values: the encoder output, source_mask
  ffn          fc2(relu(fc1(x))), Linear(D, F), Linear(F, D)
  post-LN      (the released code) x = norm1(x + self(x)); [decoder: x = norm2(x + cross(x, memory))];
               x = norm_last(x + ffn(x))
  pre-LN       x = x + self(norm1(x)); [x = x + cross(norm2(x), memory)]; x = x + ffn(norm_last(x));
               then encoder.final_norm / decoder.final_norm on each stack's output
  loss         cross_entropy(logits [B, T, V], decoder_target [B, T], ignore_index -1,
               label_smoothing eps), mean over the scored targets (teacher forcing)

The batch follows posgrad's transduction batches (datasets/transduction/transduction_batch.h):
source [B, N] padded with 0 and source_mask; decoder_input = target[0 .. L-1] cut to T = max L - 1
(padded with 0), decoder_target = target[1 .. L-1] padded with -1; for trees source_heap,
decoder_heap (0 for SOS and padding); decoder_mask: for scored steps i, j order[j] <= order[i],
any other query row j <= i.

Parameter names (param.<name>, grad.<name>, after_adamw.<name>):
  embedding.weight, positional.generators (ape only),
  encoder.layers.0.{self_attention.{q,k,v,out}_proj, norm1, ff.fc1, ff.fc2, norm2}.*,
  decoder.layers.0.{self_attention.*, norm1, cross_attention.*, norm2, ff.*, norm3}.*,
  encoder.final_norm.*, decoder.final_norm.* (pre-LN only)

Each file tests/golden/encoder_decoder_<case>.safetensors holds the examples (example.<i>.source,
.target, and for trees .source_heap, .target_heap, .target_order; tests/datasets checks that
posgrad batches them into exactly this batch), the batch (source, source_mask, decoder_input,
decoder_target, decoder_mask, and source_heap, decoder_heap for trees), every
parameter, encoder_output [B, N, D], logits [B, T, V], loss, every parameter gradient, the losses
of 3 AdamW steps (adamw_losses, each the loss before its step) and every parameter after them;
the metadata has the config (JSON), seed, torch version, format_version and the command that
regenerates the files.

Before writing, the script checks itself: the sinusoidal model against torch.nn.Transformer
layers carrying the same weights (both norm orders), the APE maps against spec 11's identities,
and one APE attention (sequence and tree) against tools/golden_ape.py's separately written layer.

Usage: /usr/bin/python3 tools/golden_encoder_decoder.py [--out tests/golden]
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_transformer import golden_out_dir, write_safetensors  # noqa: E402  (the one minimal writer)

FORMAT_VERSION = 1
REGENERATE = "/usr/bin/python3 tools/golden_encoder_decoder.py"


# ------------------------------------------------------------------ the batch (transduction_batch.h)

def make_batch(examples):
    """examples: dicts with source, target (token lists) and, for trees, source_heap, target_heap,
    target_order. Returns the batch tensors as posgrad's make_transduction_batch builds them."""
    B = len(examples)
    N = max(len(e["source"]) for e in examples)
    T = max(len(e["target"]) for e in examples) - 1
    trees = "source_heap" in examples[0]
    source = torch.zeros(B, N, dtype=torch.int64)
    source_mask = torch.zeros(B, N)
    decoder_input = torch.zeros(B, T, dtype=torch.int64)
    decoder_target = torch.full((B, T), -1, dtype=torch.int64)
    decoder_mask = torch.zeros(B, T, T)
    source_heap = torch.zeros(B, N, dtype=torch.int64)
    decoder_heap = torch.zeros(B, T, dtype=torch.int64)
    for b, e in enumerate(examples):
        n, steps = len(e["source"]), len(e["target"]) - 1
        source[b, :n] = torch.tensor(e["source"])
        source_mask[b, :n] = 1
        fed = min(steps + 1, T)
        decoder_input[b, :fed] = torch.tensor(e["target"][:fed])
        decoder_target[b, :steps] = torch.tensor(e["target"][1:])
        order = e.get("target_order") or list(range(steps + 1))
        for i in range(T):
            for j in range(T):
                if i < steps:
                    decoder_mask[b, i, j] = float(j < steps and order[j] <= order[i])
                else:
                    decoder_mask[b, i, j] = float(j <= i)
        if trees:
            source_heap[b, :n] = torch.tensor(e["source_heap"])
            decoder_heap[b, :fed] = torch.tensor(e["target_heap"][:fed])
    batch = {"source": source, "source_mask": source_mask, "decoder_input": decoder_input,
             "decoder_target": decoder_target, "decoder_mask": decoder_mask}
    if trees:
        batch["source_heap"] = source_heap
        batch["decoder_heap"] = decoder_heap
    return batch


# ------------------------------------------------------------------ positions

def tree_word(heap, kappa=2):
    """The intended mapping (spec 5): heap p -> the word of 0-indexed node p - 1; heap 0 -> []."""
    if heap == 0:
        return []
    node, word = heap - 1, []
    while node > 0:
        word.append((node - 1) % kappa)
        node = (node - 1) // kappa
    return word[::-1]


def tree_distance(u, v):
    lcp = 0
    while lcp < len(u) and lcp < len(v) and u[lcp] == v[lcp]:
        lcp += 1
    return len(u) + len(v) - 2 * lcp


def sinusoid(n, D):
    p = torch.arange(n, dtype=torch.float64)[:, None]
    i = torch.arange(0, D, 2, dtype=torch.float64)[None, :]
    angle = p * torch.pow(torch.tensor(10000.0, dtype=torch.float64), -i / D)
    pe = torch.zeros(n, D)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe


# ------------------------------------------------------------------ the model

def linear_module(D_in, D_out):
    return torch.nn.Linear(D_in, D_out)


def attention_module(D):
    a = torch.nn.Module()
    for p in ("q_proj", "k_proj", "v_proj", "out_proj"):
        setattr(a, p, linear_module(D, D))
    return a


def ff_module(D, F):
    f = torch.nn.Module()
    f.fc1 = linear_module(D, F)
    f.fc2 = linear_module(F, D)
    return f


class EncoderDecoder(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        V, D, H, F = cfg["vocab"], cfg["width"], cfg["heads"], cfg["ff"]
        Dh = D // H
        self.cfg = cfg
        self.embedding = torch.nn.Module()
        self.embedding.weight = torch.nn.Parameter(torch.randn(V, D))  # N(0, 1), as released
        if cfg["positional"] == "ape":
            self.positional = torch.nn.Module()
            count = H if cfg["structure"] == "sequence" else cfg["branching"] * H
            self.positional.generators = torch.nn.Parameter(0.4 * torch.randn(count, Dh, Dh))
        self.encoder = torch.nn.Module()
        self.encoder.layers = torch.nn.ModuleList()
        for _ in range(cfg["encoder_layers"]):
            layer = torch.nn.Module()
            layer.self_attention = attention_module(D)
            layer.norm1 = torch.nn.LayerNorm(D)
            layer.ff = ff_module(D, F)
            layer.norm2 = torch.nn.LayerNorm(D)
            self.encoder.layers.append(layer)
        self.decoder = torch.nn.Module()
        self.decoder.layers = torch.nn.ModuleList()
        for _ in range(cfg["decoder_layers"]):
            layer = torch.nn.Module()
            layer.self_attention = attention_module(D)
            layer.norm1 = torch.nn.LayerNorm(D)
            layer.cross_attention = attention_module(D)
            layer.norm2 = torch.nn.LayerNorm(D)
            layer.ff = ff_module(D, F)
            layer.norm3 = torch.nn.LayerNorm(D)
            self.decoder.layers.append(layer)
        if cfg["pre_norm"]:
            self.encoder.final_norm = torch.nn.LayerNorm(D)
            self.decoder.final_norm = torch.nn.LayerNorm(D)
        # Non-trivial LayerNorm affine parameters, so their gradients are tested meaningfully.
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, torch.nn.LayerNorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.2, 0.2)

    # ---- positions: per-token maps [B|1, H|1, n, Dh, Dh] and decay factors [B|1, Nq, Nk]

    def sequence_maps(self, n_source, n_target):
        """The maps of positions 0 .. max(N, T) - 1, computed once (repeated products)."""
        a = self.positional.generators
        W = torch.matrix_exp(a - a.transpose(-1, -2))  # [H, Dh, Dh]
        Dh = W.shape[-1]
        powers, p = [], torch.eye(Dh).expand_as(W)
        for _ in range(max(n_source, n_target)):
            powers.append(p)
            p = p @ W
        table = torch.stack(powers, 1)[None]  # [1, H, L, Dh, Dh]
        return table[:, :, :n_source], table[:, :, :n_target]

    def tree_maps(self, heaps):
        """heaps [B, n] -> maps [B, H, n, Dh, Dh]: M = W_{b1}^T ... W_{bt}^T per token."""
        a = self.positional.generators
        W = torch.matrix_exp(a - a.transpose(-1, -2))  # [kappa*H, Dh, Dh]
        kappa, H = self.cfg["branching"], self.cfg["heads"]
        Dh = W.shape[-1]
        Wb = W.reshape(kappa, H, Dh, Dh)
        rows = []
        for row in heaps.tolist():
            maps = []
            for p in row:
                m = torch.eye(Dh).expand(H, Dh, Dh)
                for b in tree_word(p, kappa):
                    m = m @ Wb[b].transpose(-1, -2)
                maps.append(m)
            rows.append(torch.stack(maps, 1))  # [H, n, Dh, Dh]
        return torch.stack(rows, 0)

    def positional_terms(self, batch):
        """(maps_source, maps_target, decay_enc [.., N, N], decay_dec [.., T, T], decay_cross [.., T, N])."""
        cfg = self.cfg
        N, T = batch["source"].shape[1], batch["decoder_input"].shape[1]
        if cfg["positional"] != "ape":
            return None, None, None, None, None
        c = cfg["decay"]
        if cfg["structure"] == "sequence":
            ms, mt = self.sequence_maps(N, T)
            dist = lambda n, m: (torch.arange(n)[:, None] - torch.arange(m)[None, :]).abs().double()[None]
            return ms, mt, c ** dist(N, N), c ** dist(T, T), c ** dist(T, N)
        sh, th = batch["source_heap"], batch["decoder_heap"]
        ms, mt = self.tree_maps(sh), self.tree_maps(th)

        def dist(qh, kh):
            out = []
            for qrow, krow in zip(qh.tolist(), kh.tolist()):
                out.append([[tree_distance(tree_word(i), tree_word(j)) for j in krow] for i in qrow])
            return torch.tensor(out, dtype=torch.float64)

        return ms, mt, c ** dist(sh, sh), c ** dist(th, th), c ** dist(th, sh)

    # ---- layers

    def attention(self, a, xq, xkv, mask, maps_q, maps_k, decay):
        """xq [B, Nq, D], xkv [B, Nk, D], mask [B|1, Nq|1, Nk] (1 = may attend)."""
        B, Nq, D = xq.shape
        Nk = xkv.shape[1]
        H = self.cfg["heads"]
        Dh = D // H
        heads = lambda t, n: t.view(B, n, H, Dh).permute(0, 2, 1, 3)  # [B, H, n, Dh]
        q, k, v = heads(a.q_proj(xq), Nq), heads(a.k_proj(xkv), Nk), heads(a.v_proj(xkv), Nk)
        if maps_q is not None:
            q = (maps_q @ q[..., None])[..., 0]
            k = (maps_k @ k[..., None])[..., 0]
        s = q @ k.transpose(-1, -2) / math.sqrt(Dh)  # [B, H, Nq, Nk]
        if decay is not None:
            s = s * decay[:, None]
        s = s.masked_fill(mask[:, None] == 0, float("-inf"))
        p = torch.softmax(s, dim=-1)
        return a.out_proj((p @ v).permute(0, 2, 1, 3).reshape(B, Nq, D))

    def ff(self, f, x):
        return f.fc2(torch.relu(f.fc1(x)))

    def embed(self, ids):
        D = self.cfg["width"]
        x = torch.nn.functional.embedding(ids, self.embedding.weight,
                                          scale_grad_by_freq=self.cfg["scale_grad_by_freq"]) * math.sqrt(D)
        if self.cfg["positional"] == "sinusoidal":
            x = x + sinusoid(ids.shape[1], D)[None]
        return x

    def forward(self, batch):
        """Returns (encoder output [B, N, D], logits [B, T, V])."""
        pre = self.cfg["pre_norm"]
        ms, mt, decay_enc, decay_dec, decay_cross = self.positional_terms(batch)
        source_keys = batch["source_mask"][:, None, :]  # [B, 1, N]
        x = self.embed(batch["source"])
        for l in self.encoder.layers:
            if pre:
                h = l.norm1(x)
                x = x + self.attention(l.self_attention, h, h, source_keys, ms, ms, decay_enc)
                x = x + self.ff(l.ff, l.norm2(x))
            else:
                x = l.norm1(x + self.attention(l.self_attention, x, x, source_keys, ms, ms, decay_enc))
                x = l.norm2(x + self.ff(l.ff, x))
        memory = self.encoder.final_norm(x) if pre else x
        y = self.embed(batch["decoder_input"])
        for l in self.decoder.layers:
            if pre:
                h = l.norm1(y)
                y = y + self.attention(l.self_attention, h, h, batch["decoder_mask"], mt, mt, decay_dec)
                y = y + self.attention(l.cross_attention, l.norm2(y), memory, source_keys, mt, ms, decay_cross)
                y = y + self.ff(l.ff, l.norm3(y))
            else:
                y = l.norm1(y + self.attention(l.self_attention, y, y, batch["decoder_mask"], mt, mt, decay_dec))
                y = l.norm2(y + self.attention(l.cross_attention, y, memory, source_keys, mt, ms, decay_cross))
                y = l.norm3(y + self.ff(l.ff, y))
        if pre:
            y = self.decoder.final_norm(y)
        return memory, y @ self.embedding.weight.t()


def loss_of(model, batch):
    cfg = model.cfg
    memory, logits = model(batch)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, cfg["vocab"]), batch["decoder_target"].reshape(-1),
                                             ignore_index=-1, label_smoothing=cfg["label_smoothing"])
    return memory, logits, loss


# ------------------------------------------------------------------ the cases

def sequence_examples(gen, vocab):
    """Three REVERSE-like and COPY-like examples of different lengths (tokens 1 .. vocab - 2)."""
    out = []
    for n, copy in ((5, True), (3, False), (4, False)):
        word = torch.randint(1, vocab - 2, (n,), generator=gen).tolist()
        if copy:  # SOS word EOS, as COPY
            seq = [0] + word + [vocab - 1]
            out.append({"source": seq, "target": seq})
        else:
            out.append({"source": word, "target": word[::-1]})
    return out


def tree_examples(gen, vocab):
    """Two tree examples: source breadth-first, target depth-first, SOS first (tree_tasks.h)."""
    def labels(n):
        return torch.randint(1, vocab - 1, (n,), generator=gen).tolist()
    # tree 1: heap 1 with children 2, 3; 3 with children 6, 7.   tree 2: 1; 2, 3; 4, 5 under 2; 10, 11 under 5.
    src1, src2 = [1, 2, 3, 6, 7], [1, 2, 3, 4, 5, 10, 11]
    tgt1, tgt2 = [1, 2, 3, 6, 7], [1, 2, 4, 5, 10, 11, 3]  # depth-first (pre-order) heap positions
    out = []
    for s, t in ((src1, tgt1), (src2, tgt2)):
        out.append({"source": [0] + labels(len(s)), "source_heap": [0] + s,
                    "target": [0] + labels(len(t)), "target_heap": [0] + t,
                    "target_order": list(range(len(t) + 1))})
    return out


def make_golden(name, cfg, seed, out):
    torch.manual_seed(seed)
    model = EncoderDecoder(cfg)
    gen = torch.Generator().manual_seed(seed + 1000)
    examples = tree_examples(gen, cfg["vocab"]) if cfg.get("structure") == "tree" else \
        sequence_examples(gen, cfg["vocab"])
    batch = make_batch(examples)
    tensors = dict(batch)
    for i, e in enumerate(examples):  # the examples themselves, for the batch layout test
        for key, values in e.items():
            tensors[f"example.{i}.{key}"] = torch.tensor(values, dtype=torch.int64)
    for pname, p in model.named_parameters():
        tensors["param." + pname] = p.detach().clone()

    memory, logits, loss = loss_of(model, batch)
    loss.backward()
    tensors["encoder_output"] = memory.detach()
    tensors["logits"] = logits.detach()
    tensors["loss"] = loss.detach().reshape([])
    for pname, p in model.named_parameters():
        tensors["grad." + pname] = p.grad.detach().clone()

    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=cfg["weight_decay"])
    losses = []
    for _ in range(3):
        opt.zero_grad()
        _, _, step_loss = loss_of(model, batch)
        step_loss.backward()
        opt.step()
        losses.append(step_loss.item())
    tensors["adamw_losses"] = torch.tensor(losses, dtype=torch.float64)
    for pname, p in model.named_parameters():
        tensors["after_adamw." + pname] = p.detach().clone()
    path = os.path.join(out, f"encoder_decoder_{name}.safetensors")
    write_safetensors(path, tensors, {"config": json.dumps(cfg), "seed": seed, "torch": torch.__version__,
                                      "format_version": FORMAT_VERSION, "generator": "tools/golden_encoder_decoder.py",
                                      "regenerate": REGENERATE})
    print(f"wrote {path}: loss {loss.item():.8f}, AdamW losses {', '.join(f'{l:.8f}' for l in losses)}")


# ------------------------------------------------------------------ self-checks (run before writing)

def check_against_torch_transformer(cfg):
    """The sinusoidal model's wiring (layers, norms, masks, cross attention) against
    torch.nn.TransformerEncoder/DecoderLayer with the same weights: equal logits."""
    torch.manual_seed(0)
    model = EncoderDecoder(cfg)
    batch = make_batch(sequence_examples(torch.Generator().manual_seed(0), cfg["vocab"]))
    D, H, F = cfg["width"], cfg["heads"], cfg["ff"]
    kw = dict(d_model=D, nhead=H, dim_feedforward=F, dropout=0.0, batch_first=True, norm_first=cfg["pre_norm"])
    enc, dec = torch.nn.TransformerEncoderLayer(**kw), torch.nn.TransformerDecoderLayer(**kw)

    def load_attention(theirs, ours):
        with torch.no_grad():
            theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
            theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
            theirs.out_proj.weight.copy_(ours.out_proj.weight)
            theirs.out_proj.bias.copy_(ours.out_proj.bias)

    def load_module(theirs, ours):
        theirs.load_state_dict(ours.state_dict())

    e, d = model.encoder.layers[0], model.decoder.layers[0]
    load_attention(enc.self_attn, e.self_attention)
    load_module(enc.linear1, e.ff.fc1), load_module(enc.linear2, e.ff.fc2)
    load_module(enc.norm1, e.norm1), load_module(enc.norm2, e.norm2)
    load_attention(dec.self_attn, d.self_attention)
    load_attention(dec.multihead_attn, d.cross_attention)
    load_module(dec.linear1, d.ff.fc1), load_module(dec.linear2, d.ff.fc2)
    load_module(dec.norm1, d.norm1), load_module(dec.norm2, d.norm2), load_module(dec.norm3, d.norm3)
    pad = batch["source_mask"] == 0
    self_mask = (batch["decoder_mask"] == 0).repeat_interleave(H, 0)  # [B*H, T, T], True = blocked
    memory = enc(model.embed(batch["source"]), src_key_padding_mask=pad)
    if cfg["pre_norm"]:
        memory = model.encoder.final_norm(memory)
    y = dec(model.embed(batch["decoder_input"]), memory, tgt_mask=self_mask, memory_key_padding_mask=pad)
    if cfg["pre_norm"]:
        y = model.decoder.final_norm(y)
    theirs = y @ model.embedding.weight.t()
    _, ours = model(batch)
    assert torch.allclose(ours, theirs, atol=1e-10), f"wiring differs from torch.nn.Transformer: {(ours - theirs).abs().max()}"


def check_ape_scores():
    """Spec 3.2 and 11: with the maps, (W^i q) . (W^j k) = q^T W^(j-i) k; and the tree cancellation
    M(u)^T M(v) = W1 W0^T W1^T for u = [0, 1] (heap 5), v = [0, 0, 1] (heap 9)."""
    torch.manual_seed(1)
    cfg = dict(vocab=12, width=16, heads=2, ff=32, encoder_layers=1, decoder_layers=1, positional="ape",
               structure="sequence", branching=2, pre_norm=False, scale_grad_by_freq=False, decay=0.9)
    model = EncoderDecoder(cfg)
    ms, _ = model.sequence_maps(6, 6)  # [1, H, 6, Dh, Dh]
    a = model.positional.generators
    W = torch.matrix_exp(a - a.transpose(-1, -2))
    q, k = torch.randn(8), torch.randn(8)
    for i, j in ((1, 4), (4, 1), (2, 2), (0, 5)):
        lhs = (ms[0, 0, i] @ q) @ (ms[0, 0, j] @ k)
        rel = torch.linalg.matrix_power(W[0] if j >= i else W[0].t(), abs(j - i))
        assert torch.allclose(lhs, q @ rel @ k, atol=1e-10), "sequence maps are not relative"
    tree = EncoderDecoder(dict(cfg, structure="tree"))
    maps = tree.tree_maps(torch.tensor([[5, 9]]))  # [1, H, 2, Dh, Dh]
    b = tree.positional.generators
    Wb = torch.matrix_exp(b - b.transpose(-1, -2)).reshape(2, 2, 8, 8)  # [branch, head, Dh, Dh]
    for h in range(2):
        lhs = maps[0, h, 0].t() @ maps[0, h, 1]
        rhs = Wb[1, h] @ Wb[0, h].t() @ Wb[1, h].t()
        assert torch.allclose(lhs, rhs, atol=1e-10), "tree maps do not cancel their shared prefix"
    assert tree_word(5) == [0, 1] and tree_word(9) == [0, 0, 1] and tree_word(1) == [] and tree_word(0) == []
    assert tree_distance(tree_word(4), tree_word(3)) == 3


def check_against_golden_ape():
    """One APE attention of this model against tools/golden_ape.py's ApeAttention (written
    separately from the same spec) with the same weights: sequences (causal) and trees."""
    from golden_ape import ApeAttention
    torch.manual_seed(2)
    base = dict(vocab=12, width=16, heads=2, ff=32, encoder_layers=1, decoder_layers=1, positional="ape",
                branching=2, pre_norm=False, scale_grad_by_freq=False, decay=0.9)
    heap = [[1, 2, 3, 4, 5, 6, 7], [0, 1, 3, 6, 7, 14, 13]]
    for structure in ("sequence", "tree"):
        ours = EncoderDecoder(dict(base, structure=structure))
        theirs_cfg = dict(width=16, heads=2, decay=0.9, kind=structure, causal=structure == "sequence",
                          options={"mapping": "intended", "decay_distance": "intended"}, heap=heap)
        theirs = ApeAttention(theirs_cfg)
        a = ours.encoder.layers[0].self_attention
        with torch.no_grad():
            theirs.hooks[0].orthogonal.generators.copy_(ours.positional.generators)
            for p in ("q_proj", "k_proj", "v_proj", "out_proj"):
                getattr(theirs, p).load_state_dict(getattr(a, p).state_dict())
        x = torch.randn(2, 7, 16)
        if structure == "sequence":
            maps, _ = ours.sequence_maps(7, 7)
            dist = (torch.arange(7)[:, None] - torch.arange(7)[None, :]).abs().double()[None]
            mask = torch.ones(7, 7).tril()[None]
        else:
            heaps = torch.tensor(heap)
            maps = ours.tree_maps(heaps)
            dist = torch.tensor([[[tree_distance(tree_word(i), tree_word(j)) for j in row] for i in row]
                                 for row in heap], dtype=torch.float64)
            mask = torch.ones(1, 7, 7)
        mine = ours.attention(a, x, x, mask, maps, maps, 0.9 ** dist)
        assert torch.allclose(mine, theirs(x), atol=1e-10), f"APE attention differs from golden_ape.py ({structure})"


def main():
    out = golden_out_dir(__doc__.split("\n")[0])
    torch.set_default_dtype(torch.float64)
    check_ape_scores()
    check_against_golden_ape()
    base = dict(vocab=12, width=16, heads=2, ff=32, encoder_layers=1, decoder_layers=1, lr=1e-2,
                weight_decay=0.01, decay=0.9)
    cases = {
        # the released recipe: post-LN, APE with decay, scale_grad_by_freq, label smoothing
        "ape_postnorm": dict(base, positional="ape", structure="sequence", pre_norm=False,
                             scale_grad_by_freq=True, label_smoothing=0.1),
        # the paper's Table 3 for transduction: pre-LN; the sinusoidal baseline (no decay)
        "sinusoidal_prenorm": dict(base, positional="sinusoidal", pre_norm=True, scale_grad_by_freq=False,
                                   label_smoothing=0.0),
        # tree APE on heap positions, depth-first targets with the traversal-derived mask
        "ape_tree_postnorm": dict(base, positional="ape", structure="tree", branching=2, pre_norm=False,
                                  scale_grad_by_freq=False, label_smoothing=0.0),
    }
    check_against_torch_transformer(cases["sinusoidal_prenorm"])
    check_against_torch_transformer(dict(cases["sinusoidal_prenorm"], pre_norm=False))
    for index, (name, cfg) in enumerate(cases.items()):
        make_golden(name, cfg, 20 + index, out)


if __name__ == "__main__":
    main()
