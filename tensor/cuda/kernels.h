// The launch interface between the CUDA backend's host side (backend.cpp, written against Tensor)
// and its kernels (*.cu, written against raw pointers). Everything here is plain data: pointers
// to each operand's first element, sizes, strides in elements, a dtype code and the device's
// stream. Keeping Tensor, fmt and the op front-end out of the .cu files keeps nvcc fast and its
// C++ dialect irrelevant. This file deliberately holds no logic; every launch_* function queues
// work on `stream` and returns without synchronising unless its comment says otherwise.
// Shapes: letters of shape_legend.h, except R (the length of one row) and, for the index ops,
// n and m (the indexed axis's size and the number of indices).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/cuda/strided.h"
#include "tensor/op_codes.h"
#include "tensor/window2d.h"

namespace posgrad::cuda {

// Dtype codes, in the order of posgrad::DType (checked by static_assert in backend.cpp).
enum class KType : int { F32 = 0, F64 = 1, I64 = 2 };

// Op codes are posgrad's own (tensor/op_codes.h), shared with the front-end.

// ------------------------------------------------------------ elementwise.cu
void launch_copy(KType dst_type, void* dst, KType src_type, const void* src, const Strided<2>& s,
                 cudaStream_t stream);
void launch_fill(KType type, void* dst, int64_t n, double value, cudaStream_t stream);
void launch_unary(KType type, UnaryOp op, const void* x, void* out, const Strided<2>& s, double p,
                  double q, cudaStream_t stream);
// Integer division by zero writes 1 to *error_flag (device memory, zeroed by the caller).
void launch_binary(KType type, BinaryOp op, const void* a, const void* b, void* out,
                   const Strided<3>& s, int64_t* error_flag, cudaStream_t stream);
void launch_where(KType type, KType cond_type, const void* cond, const void* a, const void* b,
                  void* out, const Strided<4>& s, cudaStream_t stream);
// dst[i] = src[i] rounded to bfloat16 (to nearest, ties to even); dst holds n 2-byte values.
void launch_round_to_bf16(const float* src, void* dst, int64_t n, cudaStream_t stream);
// dst[i] += src[i] (operand 0 = src, operand 1 = dst).
void launch_accumulate(KType type, void* dst, const void* src, const Strided<2>& s,
                       cudaStream_t stream);

// ------------------------------------------------------------ rows.cu (x contiguous [rows, R])
// `device` is where scratch for split rows comes from (the caching allocator).
void launch_reduce_rows(KType type, ReduceOp op, const void* x, void* out, int64_t rows, int64_t R,
                        int64_t correction, int device, cudaStream_t stream);
void launch_argmax_rows(KType type, const void* x, int64_t* out, int64_t rows, int64_t R,
                        cudaStream_t stream);
void launch_softmax_rows(KType type, const void* x, void* y, int64_t rows, int64_t R, bool log,
                         cudaStream_t stream);
void launch_softmax_backward_rows(KType type, const void* y, const void* dy, void* dx,
                                  int64_t rows, int64_t R, bool log, cudaStream_t stream);
// weight/bias may be null (no affine).
void launch_layer_norm(KType type, const void* x, const void* weight, const void* bias, double eps,
                       void* y, void* mean, void* rstd, int64_t rows, int64_t D,
                       cudaStream_t stream);
// weight null: no affine and dweight/dbias are not written.
void launch_layer_norm_backward(KType type, const void* dy, const void* x, const void* weight,
                                const void* mean, const void* rstd, void* dx, void* dweight,
                                void* dbias, int64_t rows, int64_t D, int device,
                                cudaStream_t stream);

// ------------------------------------------------------------ indexing.cu
// Writes into *first_bad (device memory, set to INT64_MAX by the caller) the smallest position p
// with index[p] outside [0, n). The host reads it back (the one synchronisation of index ops).
void launch_check_indices(const int64_t* index, int64_t count, int64_t n, int64_t* first_bad,
                          cudaStream_t stream);
// x [outer, n, inner], index [m] -> out [outer, m, inner].
void launch_index_select(KType type, const void* x, const int64_t* index, void* out,
                         int64_t outer, int64_t n, int64_t inner, int64_t m, cudaStream_t stream);
// out [outer, n, inner] += src [outer, m, inner] at rows index [m] (atomic adds).
void launch_index_add(KType type, const int64_t* index, const void* src, void* out, int64_t outer,
                      int64_t n, int64_t inner, int64_t m, cudaStream_t stream);
// x [outer, n, inner], index/out [outer, m, inner].
void launch_gather(KType type, const void* x, const int64_t* index, void* out, int64_t outer,
                   int64_t n, int64_t inner, int64_t m, cudaStream_t stream);
// out [outer, n, inner] += src at index, index/src [outer, m, inner] (atomic adds).
void launch_scatter_add(KType type, const int64_t* index, const void* src, void* out,
                        int64_t outer, int64_t n, int64_t inner, int64_t m, cudaStream_t stream);
// Philox4x32-10 fill of n contiguous elements (the same numbers as tensor/random.h).
void launch_random(KType type, RandomKind kind, void* out, int64_t n, double a, double b,
                   uint64_t seed, uint64_t offset, cudaStream_t stream);

// ------------------------------------------------------------ window2d.cu (tensor/window2d.h)
// x [B, C, Y, X] -> cols [B, k, Yo * Xo] (one thread per cols element).
void launch_im2col(KType type, const void* x, void* cols, int64_t batch, const Window2d& window,
                   cudaStream_t stream);
// cols [B, k, Yo * Xo] -> x [B, C, Y, X], overwritten: one thread per input element sums the
// cols entries that read it (no atomics, deterministic).
void launch_col2im(KType type, const void* cols, void* x, int64_t batch, const Window2d& window,
                   cudaStream_t stream);
// x [P, Y, X] -> out, argmax [P, Yo, Xo] (one thread per output element).
void launch_max_pool2d(KType type, const void* x, void* out, int64_t* argmax, int64_t planes,
                       const Window2d& window, cudaStream_t stream);

// ------------------------------------------------------------ adam.cu
// The fused Adam/AdamW update of n contiguous elements (formula in nn/adam.h). Coefficients are
// computed on the host in double; the kernel rounds them to the parameter's dtype once, like the
// CPU loop.
struct AdamCoefficients {
  double beta1, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, decay;
  double neg_step_size;  // -lr / (1 - beta1^t)
  double bias2_sqrt;     // sqrt(1 - beta2^t)
  bool decoupled;        // AdamW: p *= decay first
  bool l2;               // Adam with weight decay: g += weight_decay * p
  bool amsgrad;
};
void launch_adam(KType type, void* param, const void* grad, void* m, void* v, void* vmax,
                 int64_t n, const AdamCoefficients& k, cudaStream_t stream);

}  // namespace posgrad::cuda
