#!/usr/bin/env python3
"""Check a safetensors file independently of posgrad: a reader written from the format spec
(json + struct + torch only), so files posgrad writes can be verified by a second
implementation, and files it must read can be produced by one.

  check_safetensors.py FILE...          validate each file, print its tensors and metadata
  check_safetensors.py --write FILE     write a sample file (F32/F64/I64, scalar, 0-size,
                                        keys out of offset order) for posgrad to load

If the official `safetensors` package happens to be importable, each checked file is also
loaded with it and compared tensor by tensor. Exits non-zero on the first problem.
"""
import argparse
import json
import struct
import sys

import torch

DTYPES = {"F32": (torch.float32, 4), "F64": (torch.float64, 8), "I64": (torch.int64, 8)}


def read(path):
    """Returns (ordered dict name -> tensor, metadata), raising ValueError naming the problem."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: {len(raw)} bytes, shorter than the 8-byte header size")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError(f"{path}: header size {n} but only {len(raw) - 8} bytes follow")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is not a JSON object")
    data = raw[8 + n:]
    metadata = header.pop("__metadata__", {})
    if not all(isinstance(v, str) for v in metadata.values()):
        raise ValueError(f"{path}: metadata values must be strings")
    spans, tensors = [], {}
    for name, entry in header.items():
        if set(entry) != {"dtype", "shape", "data_offsets"}:
            raise ValueError(f"{path}: tensor {name!r} has fields {sorted(entry)}")
        if entry["dtype"] not in DTYPES:
            raise ValueError(f"{path}: tensor {name!r} has unsupported dtype {entry['dtype']!r}")
        dtype, size = DTYPES[entry["dtype"]]
        shape = entry["shape"]
        begin, end = entry["data_offsets"]
        numel = 1
        for s in shape:
            numel *= s
        if end - begin != numel * size or end > len(data) or begin > end:
            raise ValueError(f"{path}: tensor {name!r} offsets [{begin}, {end}] do not fit shape {shape}")
        spans.append((begin, end, name))
        buf = bytearray(data[begin:end])
        t = torch.frombuffer(buf, dtype=dtype) if numel > 0 else torch.empty(0, dtype=dtype)
        tensors[name] = t.reshape(shape)
    covered = 0
    for begin, end, name in sorted(spans):
        if begin != covered:
            raise ValueError(f"{path}: tensor {name!r} starts at {begin}, expected {covered} (gap or overlap)")
        covered = end
    if covered != len(data):
        raise ValueError(f"{path}: {len(data) - covered} trailing bytes")
    if n % 8 != 0:
        print(f"note: {path}: header size {n} is not a multiple of 8 (allowed, but posgrad pads)")
    return tensors, metadata


def write_sample(path):
    tensors = {
        "z.f32": torch.tensor([[1.5, -2.0, 3.25], [0.0, -0.0, 1e-30]], dtype=torch.float32),
        "a.f64": torch.tensor([3.141592653589793, -1e300], dtype=torch.float64),
        "m.i64": torch.tensor([[-(2**63)], [2**63 - 1], [42]], dtype=torch.int64),
        "scalar": torch.tensor(7.5, dtype=torch.float32),
        "empty": torch.zeros(2, 0, dtype=torch.float64),
    }
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        b = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}[t.dtype],
                        "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    header["__metadata__"] = {"writer": "tools/check_safetensors.py"}
    # Keys sorted by name, as the official writer does: not the data order.
    raw = json.dumps(dict(sorted(header.items())), separators=(",", ":")).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--write", metavar="FILE", help="write a sample file and exit")
    args = parser.parse_args()
    if args.write:
        write_sample(args.write)
        print(f"wrote {args.write}")
        return 0
    try:
        from safetensors.torch import load_file as official_load
    except ImportError:
        official_load = None
    for path in args.files:
        try:
            tensors, metadata = read(path)
        except (ValueError, json.JSONDecodeError, UnicodeDecodeError) as e:
            print(f"FAIL {e}")
            return 1
        print(f"OK {path}: {len(tensors)} tensors, metadata {metadata}")
        for name, t in tensors.items():
            print(f"  {name}: {str(t.dtype).replace('torch.', '')}{list(t.shape)} {t.flatten()[:6].tolist()}")
        if official_load is not None:
            ref = official_load(path)
            if set(ref) != set(tensors):
                print(f"FAIL official safetensors sees tensors {sorted(ref)}")
                return 1
            for name, t in tensors.items():
                as_bytes = lambda x: x.reshape(-1).view(torch.uint8) if x.numel() else x.reshape(-1)
                if ref[name].dtype != t.dtype or ref[name].shape != t.shape or not torch.equal(
                        as_bytes(ref[name]), as_bytes(t)):
                    print(f"FAIL official safetensors disagrees on {name!r}")
                    return 1
            print("  official safetensors package: identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
