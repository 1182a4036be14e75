#!/usr/bin/python3
"""PyTorch twin of bench_gpu_matmul: square float32 torch.matmul on the GPU, timed with CUDA events.

Usage: gpu_matmul_torch.py [--sizes 1024,2048,4096,8192] [--reps 20] [--tf32 0|1]
Prints one line per size: RESULT <n> <median_ms>
"""
import argparse

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="1024,2048,4096,8192")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--tf32", type=int, default=0)
    a = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_matmul_torch: torch sees no GPU")
    torch.backends.cuda.matmul.allow_tf32 = bool(a.tf32)
    torch.backends.cudnn.allow_tf32 = bool(a.tf32)
    for n in (int(s) for s in a.sizes.split(",")):
        x = torch.randn(n, n, device="cuda")
        y = torch.randn(n, n, device="cuda")
        for _ in range(3):
            torch.matmul(x, y)
        times = []
        for _ in range(a.reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.matmul(x, y)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        times.sort()
        print(f"RESULT {n} {times[len(times) // 2]:.4f}", flush=True)


if __name__ == "__main__":
    main()
