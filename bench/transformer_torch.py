#!/usr/bin/python3
"""PyTorch twin of bench_transformer: one training step (forward, cross-entropy, backward, AdamW)
of the same transformer classifier (tools/golden_transformer.py's model), on the same threads or
GPU (--device cuda: timed with CUDA events, TF32 off like posgrad's default); --autocast bf16
runs the forward and loss inside torch.autocast(dtype=torch.bfloat16), as bench_transformer's
--autocast bf16 runs its step inside an AutocastBf16 scope.
Prints one JSON line: {"median_ms": ..., "runs_ms": [...]}."""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from golden_transformer import Classifier  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    for name, default in (("batch", 32), ("tokens", 256), ("width", 128), ("heads", 4), ("ff", 512),
                          ("layers", 4), ("classes", 10), ("vocab", 256), ("reps", 5), ("warmup", 2),
                          ("threads", int(os.environ.get("OMP_NUM_THREADS", "2")))):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--activation", default="gelu")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--autocast", default="none", choices=["none", "bf16"])
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    cfg = dict(vocab=a.vocab, tokens=a.tokens, width=a.width, heads=a.heads, ff=a.ff, layers=a.layers,
               classes=a.classes, pre_norm=True, activation=a.activation)
    dev = torch.device(a.device)
    if a.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    model = Classifier(cfg).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, a.vocab, (a.batch, a.tokens), device=dev)
    pad = torch.zeros(a.batch, a.tokens, device=dev)
    labels = torch.randint(0, a.classes, (a.batch,), device=dev)

    def step():
        opt.zero_grad()
        with torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.autocast == "bf16"):
            loss = torch.nn.functional.cross_entropy(model(tokens, pad), labels)
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    runs = []
    for _ in range(a.reps):
        if a.device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            torch.cuda.synchronize()
            runs.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            step()
            runs.append((time.perf_counter() - t0) * 1e3)
    runs.sort()
    print(json.dumps({"median_ms": runs[len(runs) // 2], "runs_ms": runs, "threads": a.threads,
                      "autocast": a.autocast, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
