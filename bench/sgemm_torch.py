#!/usr/bin/env python3
"""PyTorch twin of bench_sgemm: times square float32 matmuls C = A @ B.

Two PyTorch paths are timed:
  matmul : torch.matmul, what PyTorch code actually runs. Debian's python3-torch calls whatever
           libblas.so.3 the system's alternatives select: the netlib reference BLAS (slow, a few
           GFLOP/s) unless an optimised one such as libopenblas0-pthread is installed. The INFO
           line names the library that was loaded.
  onednn : torch._C._nn.mkldnn_linear on oneDNN tensors (A @ W^T with W = B^T pre-transposed), i.e.
           PyTorch's bundled, tuned oneDNN sgemm; skipped if this build lacks it.

--isa avx2 restricts both paths to AVX2 + FMA, as on a CPU without AVX-512: OpenBLAS through
OPENBLAS_CORETYPE=Haswell (Debian's OpenBLAS picks its kernels at run time), oneDNN through
ONEDNN_MAX_CPU_ISA=AVX2 (DNNL_MAX_CPU_ISA for older versions), both set before torch loads. The
INFO line names the OpenBLAS core and the oneDNN ISA actually in use, and the script stops with an
error if a restriction did not take effect. --isa native (the default) leaves both alone.

Usage: sgemm_torch.py [--sizes 256,512,1024,2048] [--reps 10] [--threads N] [--isa native|avx2]
Threads default to OMP_NUM_THREADS, else 2. Output, one line per size and path:
  RESULT <path> <n> <median_ms> <gflops>
preceded by an INFO line with the torch version, thread count, BLAS and ISAs.
"""
import argparse
import ctypes
import os
import re
import sys
import tempfile
import time


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def blas_library():
    """The BLAS shared library mapped into this process (resolved through symlinks)."""
    libs = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                name = os.path.basename(path)
                if "blas" in name or "mkl_rt" in name:
                    libs.add(os.path.realpath(path))
    except OSError:
        return "unknown"
    return ", ".join(sorted(libs)) or "none found"


def openblas_core():
    """The kernel family OpenBLAS chose (e.g. Haswell, SkylakeX), or None if it is not OpenBLAS."""
    for path in blas_library().split(", "):
        try:
            get_corename = ctypes.CDLL(path).openblas_get_corename
        except (OSError, AttributeError):
            continue
        get_corename.restype = ctypes.c_char_p
        return get_corename().decode()
    return None


def onednn_isa(torch):
    """The ISA line oneDNN prints in verbose mode (e.g. "Intel AVX2"), read from file descriptor 1
    while one small oneDNN product runs; None if this torch has no oneDNN."""
    if not (torch.backends.mkldnn.is_available() and hasattr(torch._C._nn, "mkldnn_linear")):
        return None
    x = torch.ones(16, 16).to_mkldnn()
    with tempfile.TemporaryFile() as captured:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(captured.fileno(), 1)
        try:
            with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                torch._C._nn.mkldnn_linear(x, x, None)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        captured.seek(0)
        found = re.search(r"isa:([^\n]*)", captured.read().decode(errors="replace"))
    return found.group(1).strip() if found else "unknown"


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
    p.add_argument("--isa", choices=("native", "avx2"), default="native")
    args = p.parse_args()

    # A pthreads BLAS (OpenBLAS) reads its thread count from the environment when it loads, not
    # from torch.set_num_threads, so set it before importing torch.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    if args.isa == "avx2":
        os.environ["OPENBLAS_CORETYPE"] = "Haswell"
        os.environ["ONEDNN_MAX_CPU_ISA"] = os.environ["DNNL_MAX_CPU_ISA"] = "AVX2"
    import torch

    torch.set_num_threads(args.threads)
    blas = "unknown"
    for part in torch.__config__.show().replace(",", "\n").splitlines():
        if "BLAS_INFO" in part:
            blas = part.split("=")[-1].strip()
    torch.mm(torch.ones(64, 64), torch.ones(64, 64))  # make sure the BLAS is loaded
    core, isa = openblas_core(), onednn_isa(torch)
    if args.isa == "avx2" and core not in (None, "Haswell"):
        sys.exit(f"sgemm_torch.py: error: --isa avx2 asked OpenBLAS for Haswell kernels, it uses {core}")
    if args.isa == "avx2" and isa is not None and isa != "Intel AVX2":
        sys.exit(f"sgemm_torch.py: error: --isa avx2 asked oneDNN for AVX2, it uses {isa}")
    print(f"INFO torch {torch.__version__} threads {torch.get_num_threads()} blas {blas} "
          f"({blas_library()}, OpenBLAS core {core or '-'}), oneDNN ISA {isa or '-'}", flush=True)

    torch.manual_seed(0)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    mats = {n: (torch.randn(n, n), torch.randn(n, n)) for n in sizes}
    for n in sizes:
        a, b = mats[n]
        c = torch.empty(n, n)
        # Fewer repetitions where one multiply takes seconds (the reference BLAS at 2048).
        ms = time_fn(lambda: torch.matmul(a, b, out=c), 1, warmup=1)
        reps = max(3, min(args.reps, int(20000 / max(ms, 1e-3))))
        ms = time_fn(lambda: torch.matmul(a, b, out=c), reps, warmup=1)
        print(f"RESULT matmul {n} {ms:.4f} {2 * n**3 / ms / 1e6:.2f}", flush=True)

    if not (torch.backends.mkldnn.is_available() and hasattr(torch._C._nn, "mkldnn_linear")):
        return
    # A pthreads BLAS keeps its threads spinning for a while after a call; let them go to sleep
    # so they do not compete with oneDNN's OpenMP threads.
    time.sleep(1.0)
    for n in sizes:
        a, b = mats[n]
        am = a.to_mkldnn()
        wm = b.t().contiguous().to_mkldnn()
        ms = time_fn(lambda: torch._C._nn.mkldnn_linear(am, wm, None), args.reps)
        print(f"RESULT onednn {n} {ms:.4f} {2 * n**3 / ms / 1e6:.2f}", flush=True)

if __name__ == "__main__":
    main()
