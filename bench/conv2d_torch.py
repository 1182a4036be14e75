#!/usr/bin/env python3
"""PyTorch twin of bench_conv2d: times torch.nn.functional.conv2d at the CCT tokenizer's shapes.

x [B, 3, S, S], weight [Co, 3, k, k], stride 1, no padding, no bias, float32, CPU. "forward" is
the conv alone; "backward" is torch.autograd.grad of y with respect to x and the weight for the
output gradient R (the forward it needs runs outside the timed region, as bench_conv2d times
its two gradient ops alone).

Usage: conv2d_torch.py [--batch 128] [--channels 256] [--side 32] [--kernel 3] [--reps 5] [--warmup 1]
Threads: OMP_NUM_THREADS (else 2). Output: an INFO line, then "RESULT forward <median_ms>" and
"RESULT backward <median_ms>".
"""
import argparse
import os
import time

import torch
import torch.nn.functional as F


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for key, default in [("batch", 128), ("channels", 256), ("side", 32), ("kernel", 3), ("reps", 5), ("warmup", 1)]:
        p.add_argument("--" + key, type=int, default=default)
    a = p.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(a.batch, 3, a.side, a.side, generator=gen).requires_grad_()
    w = (torch.randn(a.channels, 3, a.kernel, a.kernel, generator=gen) * 0.2).requires_grad_()
    out = a.side - a.kernel + 1
    r = torch.rand(a.batch, a.channels, out, out, generator=gen) + 0.5

    def timed(fn, before=None):
        times = []
        for i in range(a.warmup + a.reps):
            state = before() if before else None
            t0 = time.perf_counter()
            fn(state)
            if i >= a.warmup:
                times.append((time.perf_counter() - t0) * 1e3)
        return median(times)

    with torch.no_grad():
        fwd = timed(lambda _: F.conv2d(x, w))
    bwd = timed(lambda y: torch.autograd.grad(y, [x, w], grad_outputs=r), before=lambda: F.conv2d(x, w))
    print(f"INFO torch {torch.__version__}, {torch.get_num_threads()} thread(s), mkldnn {torch.backends.mkldnn.is_available()}")
    print(f"RESULT forward {fwd:.3f}")
    print(f"RESULT backward {bwd:.3f}")


if __name__ == "__main__":
    main()
