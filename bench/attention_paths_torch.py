"""PyTorch twin of bench_attention_paths: one multi-head attention layer (four Linear(D, D)
projections, a box mask of the given radius on a 1-D or 2-D grid, weighted sum), forward +
backward of sum(output), written as dense scores with the mask, softmax and the weighted sum.
Prints "median_ms <value>". With --device cuda, on the GPU (timed after torch.cuda.synchronize),
and twice more: through scaled_dot_product_attention with the boolean mask ("sdpa_ms") and through
FlexAttention with a block mask of the same box, compiled ("flex_ms"; "flex_unavailable <reason>"
where this PyTorch has none).

Usage: attention_paths_torch.py --structure 1024 | 32x32 --radius R (-1 = no mask)
       [--batch 1] [--width 128] [--heads 4] [--reps 3] [--warmup 1] [--device cpu|cuda]
"""
import argparse
import math
import time

import torch
import torch.nn.functional as F


def box_mask(structure, radius, device):
    coords = torch.cartesian_prod(*[torch.arange(s) for s in structure]).reshape(-1, len(structure))
    off = coords[None, :, :] - coords[:, None, :]  # [N, N, n] key - query
    return (off.abs() > radius).any(-1).to(device)  # True = blocked


def median_ms(step, reps, warmup, device):
    times = []
    for r in range(warmup + reps):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        t1 = time.perf_counter()
        if r >= warmup:
            times.append((t1 - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def flex_step_factory(structure, radius, B, H, n):
    """The attention of a box through FlexAttention (compiled), or raises when there is none."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    attend = torch.compile(flex_attention)
    if radius < 0:
        return lambda q, k, v: attend(q, k, v)
    side = structure[-1]

    def inside(b, h, q_idx, kv_idx):
        if len(structure) == 1:
            return (kv_idx - q_idx).abs() <= radius
        return ((kv_idx // side - q_idx // side).abs() <= radius) & ((kv_idx % side - q_idx % side).abs() <= radius)

    block_mask = create_block_mask(inside, B=None, H=None, Q_LEN=n, KV_LEN=n, device="cuda")
    return lambda q, k, v: attend(q, k, v, block_mask=block_mask)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--structure", required=True)
    p.add_argument("--radius", type=int, default=-1)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    device = torch.device(a.device)
    structure = [int(s) for s in a.structure.split("x")]
    n = math.prod(structure)
    B, D, H = a.batch, a.width, a.heads
    Dh = D // H
    torch.manual_seed(0)
    proj = torch.nn.ModuleList([torch.nn.Linear(D, D) for _ in range(4)]).to(device)
    blocked = box_mask(structure, a.radius, device) if a.radius >= 0 else None
    x0 = torch.randn(B, n, D, device=device)

    def layer(attention):
        def step():
            x = x0.clone().requires_grad_(True)
            q, k, v = [proj[i](x).reshape(B, n, H, Dh).transpose(1, 2) for i in range(3)]
            o = attention(q, k, v)
            out = proj[3](o.transpose(1, 2).reshape(B, n, D))
            out.sum().backward()
        return step

    def dense(q, k, v):
        s = q @ k.transpose(-1, -2) / math.sqrt(Dh)
        if blocked is not None:
            s = s.masked_fill(blocked, float("-inf"))
        return torch.softmax(s, -1) @ v

    print(f"median_ms {median_ms(layer(dense), a.reps, a.warmup, device):.3f}")
    if device.type == "cuda":
        allowed = None if blocked is None else ~blocked
        sdpa = layer(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=allowed))
        print(f"sdpa_ms {median_ms(sdpa, a.reps, a.warmup, device):.3f}")
        try:
            flex = layer(flex_step_factory(structure, a.radius, B, H, n))
            print(f"flex_ms {median_ms(flex, a.reps, a.warmup + 2, device):.3f}")  # 2 more warm-ups: compiling
        except Exception as e:  # an older PyTorch, or no compiler for torch.compile
            print(f"flex_unavailable {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    print(f"threads {torch.get_num_threads()}")


if __name__ == "__main__":
    main()
