#!/usr/bin/env python3
"""PyTorch twin of bench_sgemm: times square float32 matmuls C = A @ B.

Two PyTorch paths are timed:
  matmul : torch.matmul, what PyTorch code actually runs (its BLAS; on Debian's python3-torch this
           is whatever libblas.so.3 the system selects, by default the netlib reference BLAS).
  onednn : torch._C._nn.mkldnn_linear on oneDNN tensors (A @ W^T with W = B^T pre-transposed), i.e.
           PyTorch's bundled, tuned oneDNN sgemm; skipped if this build lacks it.

Usage: sgemm_torch.py [--sizes 256,512,1024,2048] [--reps 10] [--threads N]
Threads default to OMP_NUM_THREADS, else 2. Output, one line per size and path:
  RESULT <path> <n> <median_ms> <gflops>
preceded by an INFO line with the torch version, thread count and BLAS setting.
"""
import argparse
import os
import time


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def time_fn(fn, reps, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return median(times) * 1e3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="256,512,1024,2048")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "2") or 2))
    args = p.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    blas = "unknown"
    for part in torch.__config__.show().replace(",", "\n").splitlines():
        if "BLAS_INFO" in part:
            blas = part.split("=")[-1].strip()
    print(f"INFO torch {torch.__version__} threads {torch.get_num_threads()} blas {blas}", flush=True)

    torch.manual_seed(0)
    have_onednn = torch.backends.mkldnn.is_available() and hasattr(torch._C._nn, "mkldnn_linear")
    for n in [int(s) for s in args.sizes.split(",") if s]:
        a = torch.randn(n, n)
        b = torch.randn(n, n)
        c = torch.empty(n, n)
        # Fewer repetitions where one multiply takes seconds (the reference BLAS at 2048).
        ms = time_fn(lambda: torch.matmul(a, b, out=c), 1, warmup=1)
        reps = max(3, min(args.reps, int(20000 / max(ms, 1e-3))))
        ms = time_fn(lambda: torch.matmul(a, b, out=c), reps, warmup=1)
        print(f"RESULT matmul {n} {ms:.4f} {2 * n**3 / ms / 1e6:.2f}", flush=True)
        if have_onednn:
            am = a.to_mkldnn()
            wm = b.t().contiguous().to_mkldnn()
            ms = time_fn(lambda: torch._C._nn.mkldnn_linear(am, wm, None), args.reps)
            print(f"RESULT onednn {n} {ms:.4f} {2 * n**3 / ms / 1e6:.2f}", flush=True)


if __name__ == "__main__":
    main()
