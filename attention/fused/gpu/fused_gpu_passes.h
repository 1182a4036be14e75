// The GPU fused attention's passes in their order, written once for both places they run: each
// pass is a number of threads and what thread t does (a fused_gpu_math.h function), handed to
// `run(name, threads, fn)`, which is a loop on the host (fused_gpu.cpp: the tests' emulation,
// one thread after another) or a kernel launch on the device's stream (fused_gpu.cu: the threads
// in parallel, the passes in order).
// Deliberately not here: the arithmetic (fused_gpu_math.h), CUDA (fused_gpu.cu).
// Shapes: letters of shape_legend.h (fused_gpu_math.h lists every pointer's).
#pragma once

#include "attention/fused/gpu/fused_gpu.h"

// What thread t of a pass does: compiled for the host and the device by nvcc (an extended
// lambda, --extended-lambda), for the host by g++.
#if defined(__CUDACC__)
#define POSGRAD_PASS __host__ __device__
#else
#define POSGRAD_PASS
#endif

namespace posgrad::fused_gpu {

template <typename T, class Run>
void forward_passes(const Run& run, const Problem<T>& pb, const T* q, const T* k, const T* v, T* out, T* lse,
                    const Scratch<T>& scratch, const Parts& parts) {
  const int64_t rows = pb.B * pb.H * pb.Nq, P = parts.rows, stride = kForwardExtra + pb.Dh;
  T* partials = scratch.forward;
  run("forward_part", rows * P, [=] POSGRAD_PASS(int64_t t) {
    forward_part(pb, t / P, t % P, P, q, k, v, partials + t * stride);
  });
  run("forward_merge", rows, [=] POSGRAD_PASS(int64_t row) { forward_merge(pb, row, P, partials, out, lse); });
}

template <typename T, class Run>
void backward_passes(const Run& run, const Problem<T>& pb, const T* q, const T* k, const T* v, const T* out,
                     const T* lse, const T* dout, T* dq, T* dk, T* dv, const TableGrads<T>& grads,
                     const Scratch<T>& s, const Parts& parts) {
  const int64_t rows = pb.B * pb.H * pb.Nq, keys = pb.B * pb.H * pb.N, entries = pb.H * pb.R, Dh = pb.Dh;
  const int64_t PR = parts.rows, PK = parts.keys, PE = parts.entries;
  T *D = s.D, *row_partials = s.rows, *key_partials = s.keys, *entry_partials = s.entries, *share = s.key_bias_share;
  T *d_row_mask = grads[kRowProbMask], *key_bias_grad = grads[kKeyBias];
  int64_t* support = s.support;
  run("prepare_rows", rows, [=] POSGRAD_PASS(int64_t row) {
    backward_prepare_row(pb, row, out, dout, D, d_row_mask, support);
  });
  run("row_part", rows * PR, [=] POSGRAD_PASS(int64_t t) {
    backward_row_part(pb, t / PR, t % PR, PR, q, k, v, lse, D, dout, d_row_mask, row_partials + t * Dh);
  });
  run("sum_parts", rows, [=] POSGRAD_PASS(int64_t row) { sum_parts(row, PR, Dh, row_partials, dq); });
  run("key_part", keys * PK, [=] POSGRAD_PASS(int64_t t) {
    backward_key_part(pb, t / PK, t % PK, PK, q, k, v, lse, D, dout, support, key_partials + t * (2 * Dh + 1));
  });
  run("key_merge", keys, [=] POSGRAD_PASS(int64_t key) { backward_key_merge(pb, key, PK, key_partials, dk, dv, share); });
  if (wants_entry_grads(grads) && pb.geometry.dims > 0) {
    run("entry_part", entries * PE, [=] POSGRAD_PASS(int64_t t) {
      backward_entry_part(pb, t / PE, t % PE, PE, q, k, v, lse, D, dout, support,
                          entry_partials + t * (kEntryExtra + Dh));
    });
    run("entry_merge", entries, [=] POSGRAD_PASS(int64_t e) { backward_entry_merge(pb, e, PE, entry_partials, grads); });
  }
  if (key_bias_grad)
    run("key_bias_grad", pb.H * Dh, [=] POSGRAD_PASS(int64_t hd) { key_bias_grad_at(pb, hd, k, share, key_bias_grad); });
}

}  // namespace posgrad::fused_gpu
