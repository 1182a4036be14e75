// The GPU fused attention's kernels: one thread per query row (forward, and dq in the backward),
// per key row (dk, dv), per (head, relative entry) (the tables' gradients) and per (head, d) (the
// key bias's gradient), each running fused_gpu_math.h's function for its index. Every thread
// writes only what it owns, so nothing needs atomics; the passes are ordered by the device's one
// stream (tensor/cuda/context.h).
// Deliberately not here: blocks of queries sharing their keys in shared memory, tensor cores
// (a thread reads its keys from L1/L2); the host side (fused_gpu.cpp, fused_attention.cpp).
#include "attention/fused/gpu/fused_gpu.h"
#include "tensor/cuda/context.h"
#include "tensor/cuda/device_utils.cuh"

namespace posgrad::fused_gpu {

namespace {

constexpr int kThreadsPerBlock = 128;

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreadsPerBlock - 1) / kThreadsPerBlock); }

template <typename T>
__global__ void forward_kernel(Problem<T> pb, const T* q, const T* k, const T* v, T* out, T* lse) {
  const int64_t row = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (row < pb.B * pb.H * pb.Nq) forward_row(pb, row, q, k, v, out, lse);
}

template <typename T>
__global__ void backward_row_kernel(Problem<T> pb, const T* q, const T* k, const T* v, const T* out, const T* lse,
                                    const T* dout, T* D, T* dq, T* d_row_mask, int64_t* support) {
  const int64_t row = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (row < pb.B * pb.H * pb.Nq) backward_row(pb, row, q, k, v, out, lse, dout, D, dq, d_row_mask, support);
}

template <typename T>
__global__ void backward_key_kernel(Problem<T> pb, const T* q, const T* k, const T* v, const T* lse, const T* D,
                                    const T* dout, const int64_t* support, T* dk, T* dv, T* key_bias_share) {
  const int64_t key = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (key < pb.B * pb.H * pb.N) backward_key(pb, key, q, k, v, lse, D, dout, support, dk, dv, key_bias_share);
}

template <typename T>
__global__ void backward_entry_kernel(Problem<T> pb, const T* q, const T* k, const T* v, const T* lse, const T* D,
                                      const T* dout, const int64_t* support, TableGrads<T> grads) {
  const int64_t entry = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (entry < pb.H * pb.R) backward_entry(pb, entry, q, k, v, lse, D, dout, support, grads);
}

template <typename T>
__global__ void key_bias_grad_kernel(Problem<T> pb, const T* k, const T* key_bias_share, T* grad) {
  const int64_t hd = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (hd < pb.H * pb.Dh) key_bias_grad_at(pb, hd, k, key_bias_share, grad);
}

}  // namespace

template <typename T>
void launch_forward(const Problem<T>& pb, const T* q, const T* k, const T* v, T* out, T* lse, int device) {
  const int64_t rows = pb.B * pb.H * pb.Nq;
  if (rows == 0) return;
  cudaStream_t stream = cuda::context(device).stream;
  forward_kernel<T><<<blocks_for(rows), kThreadsPerBlock, 0, stream>>>(pb, q, k, v, out, lse);
  cuda::check_launch("fused attention", "forward_kernel");
}

template <typename T>
void launch_backward(const Problem<T>& pb, const T* q, const T* k, const T* v, const T* out, const T* lse,
                     const T* dout, T* dq, T* dk, T* dv, const TableGrads<T>& grads, T* key_bias_grad,
                     const BackwardScratch<T>& scratch, int device) {
  cudaStream_t stream = cuda::context(device).stream;
  const int64_t rows = pb.B * pb.H * pb.Nq, keys = pb.B * pb.H * pb.N;
  if (rows > 0) {
    backward_row_kernel<T><<<blocks_for(rows), kThreadsPerBlock, 0, stream>>>(pb, q, k, v, out, lse, dout, scratch.D, dq,
                                                                             grads.row_prob_mask, scratch.support);
    cuda::check_launch("fused attention backward", "backward_row_kernel");
  }
  if (keys > 0) {
    backward_key_kernel<T><<<blocks_for(keys), kThreadsPerBlock, 0, stream>>>(pb, q, k, v, lse, scratch.D, dout,
                                                                             scratch.support, dk, dv,
                                                                             scratch.key_bias_share);
    cuda::check_launch("fused attention backward", "backward_key_kernel");
  }
  const bool tables = grads.query_table || grads.bias || grads.modulation || grads.positional_modulation ||
                      grads.prob_mask;
  if (tables && pb.geometry.dims > 0 && pb.H * pb.R > 0) {
    backward_entry_kernel<T><<<blocks_for(pb.H * pb.R), kThreadsPerBlock, 0, stream>>>(pb, q, k, v, lse, scratch.D,
                                                                                        dout, scratch.support, grads);
    cuda::check_launch("fused attention backward", "backward_entry_kernel");
  }
  if (key_bias_grad && pb.H * pb.Dh > 0) {
    key_bias_grad_kernel<T><<<blocks_for(pb.H * pb.Dh), kThreadsPerBlock, 0, stream>>>(pb, k, scratch.key_bias_share,
                                                                                       key_bias_grad);
    cuda::check_launch("fused attention backward", "key_bias_grad_kernel");
  }
}

template void launch_forward<float>(const Problem<float>&, const float*, const float*, const float*, float*, float*,
                                    int);
template void launch_forward<double>(const Problem<double>&, const double*, const double*, const double*, double*,
                                     double*, int);
template void launch_backward<float>(const Problem<float>&, const float*, const float*, const float*, const float*,
                                     const float*, const float*, float*, float*, float*, const TableGrads<float>&,
                                     float*, const BackwardScratch<float>&, int);
template void launch_backward<double>(const Problem<double>&, const double*, const double*, const double*,
                                      const double*, const double*, const double*, double*, double*, double*,
                                      const TableGrads<double>&, double*, const BackwardScratch<double>&, int);

}  // namespace posgrad::fused_gpu
