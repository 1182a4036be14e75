// The GPU fused attention's launch interface (fused_gpu.cu), between fused_attention.cpp (written
// against Tensor) and the kernels (written against raw device pointers): each function queues its
// kernels on the device's stream and returns without waiting. The arithmetic is fused_gpu_math.h's;
// on the host (Where::host) the same passes run on the CPU, one "thread" after another, for the
// tests.
// Deliberately not here: Tensor, autograd, table layouts and argument checks (fused_attention.cpp).
// Shapes: letters of shape_legend.h (fused_gpu_math.h lists every pointer's).
#pragma once

#include "attention/fused/gpu/fused_gpu_math.h"

namespace posgrad::fused_gpu {

// Where the passes run: on GPU `device` (its stream), or on the host (the tests' emulation).
// parts > 0 splits every row into that many parts (the tests); 0 lets Parts::plan choose.
// One call plans its parts once (Parts::plan), sizes its Scratch by them and hands them on.
struct Where {
  bool host = false;
  int device = 0;
  int64_t parts = 0;
};

// How many parts each pass splits a row into: enough threads to fill a GPU (about 2^18), and no
// part of fewer than about 32 keys, queries or pairs.
struct Parts {
  int64_t rows = 1, keys = 1, entries = 1;
  template <typename T>
  static Parts plan(const Problem<T>& pb, const Where& where);
};

// The scratch memory of the passes (device memory on a GPU), sized by the caller from Parts:
template <typename T>
struct Scratch {
  T* forward = nullptr;        // [B H Nq, parts.rows, kForwardExtra + Dh] (forward only)
  T* D = nullptr;              // [B, H, Nq]                                (backward from here on)
  T* rows = nullptr;           // [B H Nq, parts.rows, Dh]
  T* keys = nullptr;           // [B H N, parts.keys, 2 Dh + 1]
  T* entries = nullptr;        // [H R, parts.entries, kEntryExtra + Dh]   (when a relative table's gradient is wanted)
  T* key_bias_share = nullptr; // [B, H, N]                                 (when the key bias's gradient is wanted)
  int64_t* support = nullptr;  // [B, H, Nq, 2]                             (with a row mask)
};

// out [B, H, Nq, Dh] and lse [B, H, Nq] (+inf for a row that sees no key; its output is 0).
template <typename T>
void forward(const Problem<T>& pb, const T* q, const T* k, const T* v, T* out, T* lse, const Scratch<T>& scratch,
             const Parts& parts, Where where);

// dq, dk, dv (overwritten) and every non-null table gradient of `grads` (overwritten).
template <typename T>
void backward(const Problem<T>& pb, const T* q, const T* k, const T* v, const T* out, const T* lse, const T* dout,
              T* dq, T* dk, T* dv, const TableGrads<T>& grads, const Scratch<T>& scratch,
              const Parts& parts, Where where);

#ifdef POSGRAD_HAVE_CUDA
// The GPU side of forward and backward (fused_gpu.cu, built with the CUDA backend only).
template <typename T>
void launch_forward(const Problem<T>& pb, const T* q, const T* k, const T* v, T* out, T* lse, const Scratch<T>& scratch,
                    const Parts& parts, int device);
template <typename T>
void launch_backward(const Problem<T>& pb, const T* q, const T* k, const T* v, const T* out, const T* lse,
                     const T* dout, T* dq, T* dk, T* dv, const TableGrads<T>& grads,
                     const Scratch<T>& scratch, const Parts& parts, int device);
#endif

// Whether any relative table's gradient is wanted (the entries pass runs).
template <typename T>
bool wants_entry_grads(const TableGrads<T>& g) {
  bool any = g[kQueryTable] != nullptr;
  for (int kind = 0; kind < kTableCount; ++kind) any = any || (per_entry(kind) && g[kind]);
  return any;
}

}  // namespace posgrad::fused_gpu
