// The GPU fused attention's launch interface (fused_gpu.cu), between fused_attention.cpp (written
// against Tensor) and the kernels (written against raw device pointers): each function queues its
// kernels on the device's stream and returns without waiting. The arithmetic is fused_gpu_math.h's;
// run_on_host runs the same passes on the CPU, one "thread" after another, for the tests.
// Deliberately not here: Tensor, autograd, table layouts and argument checks (fused_attention.cpp).
// Shapes: letters of shape_legend.h (fused_gpu_math.h lists every pointer's).
#pragma once

#include "attention/fused/gpu/fused_gpu_math.h"

namespace posgrad::fused_gpu {

// The scratch memory a backward needs: D [B, H, Nq], the key bias's per-key shares [B, H, N] and
// the row mask's supports [B, H, Nq, 2].
template <typename T>
struct BackwardScratch {
  T* D = nullptr;
  T* key_bias_share = nullptr;  // may be null when no key bias gradient is wanted
  int64_t* support = nullptr;   // may be null without a row mask
};

// Where the passes run: on GPU `device` (its stream), or on the host (the tests' emulation).
struct Where {
  bool host = false;
  int device = 0;
};

// out [B, H, Nq, Dh] and lse [B, H, Nq] (+inf for a row that sees no key; its output is 0).
template <typename T>
void forward(const Problem<T>& pb, const T* q, const T* k, const T* v, T* out, T* lse, Where where);

// dq, dk, dv (overwritten) and every non-null table gradient of `grads` (overwritten);
// key_bias_grad [H, Dh] (null: not wanted) needs scratch.key_bias_share.
template <typename T>
void backward(const Problem<T>& pb, const T* q, const T* k, const T* v, const T* out, const T* lse, const T* dout,
              T* dq, T* dk, T* dv, const TableGrads<T>& grads, T* key_bias_grad, const BackwardScratch<T>& scratch,
              Where where);

#ifdef POSGRAD_HAVE_CUDA
// The GPU side of forward and backward (fused_gpu.cu, built with the CUDA backend only).
template <typename T>
void launch_forward(const Problem<T>& pb, const T* q, const T* k, const T* v, T* out, T* lse, int device);
template <typename T>
void launch_backward(const Problem<T>& pb, const T* q, const T* k, const T* v, const T* out, const T* lse,
                     const T* dout, T* dq, T* dk, T* dv, const TableGrads<T>& grads, T* key_bias_grad,
                     const BackwardScratch<T>& scratch, int device);
#endif

}  // namespace posgrad::fused_gpu
