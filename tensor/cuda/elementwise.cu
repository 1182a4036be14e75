// CUDA elementwise kernels: copy with dtype conversion, fill, unary and binary ops, where, and
// accumulate. One grid-stride kernel per dtype (and op family); the op is a switch inside the
// kernel (uniform across a launch, so it costs no divergence) which keeps the number of template
// instantiations, and nvcc's time, small. Operands are strided (coalesced on the host), so
// broadcasts (stride 0) and transposed views need no copy. The formulas are the CPU's own
// (tensor/element_ops.h); libdevice's transcendental functions may differ from glibc by a few ulp.
#include <cuda_bf16.h>

#include "tensor/cuda/device_utils.cuh"
#include "tensor/element_ops.h"

namespace posgrad::cuda {

namespace {

template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* out, Strided<2> s, T p, T q) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.numel;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[2];
    strided_offsets<2>(s, i, off);
    const T v = x[off[0]];
    out[off[1]] = element::with_unary_op(op, [&](auto k) { return element::unary_value<decltype(k)::value>(v, p, q); });
  }
}

template <typename T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, T* out, Strided<3> s,
                              int64_t* error_flag) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.numel;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[3];
    strided_offsets<3>(s, i, off);
    const T x = a[off[0]], y = b[off[1]];
    if constexpr (std::is_integral_v<T>)
      if (op == BinaryOp::Div && y == 0) *error_flag = 1;  // the host turns it into an Error
    out[off[2]] = element::with_binary_op(op, [&](auto k) { return element::binary_value<decltype(k)::value>(x, y); });
  }
}

template <typename D, typename S>
__global__ void copy_kernel(D* dst, const S* src, Strided<2> s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.numel;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[2];
    strided_offsets<2>(s, i, off);
    dst[off[1]] = static_cast<D>(src[off[0]]);
  }
}

template <typename T>
__global__ void fill_kernel(T* dst, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    dst[i] = value;
}

__global__ void round_to_bf16_kernel(const float* src, __nv_bfloat16* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    dst[i] = __float2bfloat16_rn(src[i]);  // to nearest, ties to even: the CPU's round_to_bf16
}

template <typename T, typename C>
__global__ void where_kernel(const C* cond, const T* a, const T* b, T* out, Strided<4> s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.numel;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[4];
    strided_offsets<4>(s, i, off);
    out[off[3]] = cond[off[0]] != C(0) ? a[off[1]] : b[off[2]];
  }
}

template <typename T>
__global__ void accumulate_kernel(T* dst, const T* src, Strided<2> s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.numel;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[2];
    strided_offsets<2>(s, i, off);
    dst[off[1]] += src[off[0]];
  }
}

}  // namespace

void launch_copy(KType dst_type, void* dst, KType src_type, const void* src, const Strided<2>& s,
                 cudaStream_t stream) {
  if (s.numel == 0) return;
  dispatch_type(dst_type, [&](auto d_tag) {
    using D = decltype(d_tag);
    dispatch_type(src_type, [&](auto s_tag) {
      using S = decltype(s_tag);
      copy_kernel<D, S><<<grid_for(s.numel), kThreads, 0, stream>>>(static_cast<D*>(dst),
                                                                     static_cast<const S*>(src), s);
    });
  });
  check_launch("copy", "copy_kernel");
}

void launch_fill(KType type, void* dst, int64_t n, double value, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    fill_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), n, static_cast<T>(value));
  });
  check_launch("fill", "fill_kernel");
}

void launch_unary(KType type, UnaryOp op, const void* x, void* out, const Strided<2>& s, double p,
                  double q, cudaStream_t stream) {
  if (s.numel == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    unary_kernel<T><<<grid_for(s.numel), kThreads, 0, stream>>>(
        op, static_cast<const T*>(x), static_cast<T*>(out), s, static_cast<T>(p), static_cast<T>(q));
  });
  check_launch("unary", "unary_kernel");
}

void launch_binary(KType type, BinaryOp op, const void* a, const void* b, void* out,
                   const Strided<3>& s, int64_t* error_flag, cudaStream_t stream) {
  if (s.numel == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    binary_kernel<T><<<grid_for(s.numel), kThreads, 0, stream>>>(
        op, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), s, error_flag);
  });
  check_launch("binary", "binary_kernel");
}

void launch_where(KType type, KType cond_type, const void* cond, const void* a, const void* b,
                  void* out, const Strided<4>& s, cudaStream_t stream) {
  if (s.numel == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    dispatch_type(cond_type, [&](auto c_tag) {
      using C = decltype(c_tag);
      where_kernel<T, C><<<grid_for(s.numel), kThreads, 0, stream>>>(
          static_cast<const C*>(cond), static_cast<const T*>(a), static_cast<const T*>(b),
          static_cast<T*>(out), s);
    });
  });
  check_launch("where", "where_kernel");
}

void launch_accumulate(KType type, void* dst, const void* src, const Strided<2>& s,
                       cudaStream_t stream) {
  if (s.numel == 0) return;
  dispatch_type(type, [&](auto t_tag) {
    using T = decltype(t_tag);
    accumulate_kernel<T><<<grid_for(s.numel), kThreads, 0, stream>>>(static_cast<T*>(dst),
                                                                      static_cast<const T*>(src), s);
  });
  check_launch("add_", "accumulate_kernel");
}

void launch_round_to_bf16(const float* src, void* dst, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  round_to_bf16_kernel<<<grid_for(n), kThreads, 0, stream>>>(src, static_cast<__nv_bfloat16*>(dst), n);
  check_launch("matmul (bf16 autocast)", "round_to_bf16_kernel");
}

}  // namespace posgrad::cuda
