// The GPU fused attention's kernels: one thread per part of a query row (forward; dq's shares),
// per part of a key row (dk, dv), per part of a (head, relative entry) (the tables' gradients),
// then one thread per row, key or entry merging its parts, and one per (head, d) for the key
// bias; each runs fused_gpu_math.h's function for its index. Every thread writes only what it
// owns, so nothing needs atomics; the passes are ordered by the device's one stream
// (tensor/cuda/context.h).
// Deliberately not here: blocks of queries sharing their keys in shared memory, tensor cores
// (a thread reads its keys through L1/L2); the host side (fused_gpu.cpp, fused_attention.cpp).
#include "attention/fused/gpu/fused_gpu.h"
#include "tensor/cuda/context.h"

namespace posgrad::fused_gpu {

namespace {

constexpr int kThreadsPerBlock = 128;

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreadsPerBlock - 1) / kThreadsPerBlock); }

__device__ int64_t thread_index() { return blockIdx.x * int64_t{blockDim.x} + threadIdx.x; }

template <typename T>
__global__ void forward_part_kernel(Problem<T> pb, int64_t parts, const T* q, const T* k, const T* v, T* partials) {
  const int64_t t = thread_index();
  if (t < pb.B * pb.H * pb.Nq * parts)
    forward_part(pb, t / parts, t % parts, parts, q, k, v, partials + t * (kForwardExtra + pb.Dh));
}

template <typename T>
__global__ void forward_merge_kernel(Problem<T> pb, int64_t parts, const T* partials, T* out, T* lse) {
  const int64_t row = thread_index();
  if (row < pb.B * pb.H * pb.Nq) forward_merge(pb, row, parts, partials, out, lse);
}

template <typename T>
__global__ void prepare_rows_kernel(Problem<T> pb, const T* out, const T* dout, T* D, T* d_row_mask, int64_t* support) {
  const int64_t row = thread_index();
  if (row < pb.B * pb.H * pb.Nq) backward_prepare_row(pb, row, out, dout, D, d_row_mask, support);
}

template <typename T>
__global__ void row_part_kernel(Problem<T> pb, int64_t parts, const T* q, const T* k, const T* v, const T* lse,
                                const T* D, const T* dout, T* d_row_mask, T* partials) {
  const int64_t t = thread_index();
  if (t < pb.B * pb.H * pb.Nq * parts)
    backward_row_part(pb, t / parts, t % parts, parts, q, k, v, lse, D, dout, d_row_mask, partials + t * pb.Dh);
}

template <typename T>
__global__ void sum_parts_kernel(int64_t rows, int64_t parts, int64_t width, const T* partials, T* out) {
  const int64_t row = thread_index();
  if (row < rows) sum_parts(row, parts, width, partials, out);
}

template <typename T>
__global__ void key_part_kernel(Problem<T> pb, int64_t parts, const T* q, const T* k, const T* v, const T* lse,
                                const T* D, const T* dout, const int64_t* support, T* partials) {
  const int64_t t = thread_index();
  if (t < pb.B * pb.H * pb.N * parts)
    backward_key_part(pb, t / parts, t % parts, parts, q, k, v, lse, D, dout, support, partials + t * (2 * pb.Dh + 1));
}

template <typename T>
__global__ void key_merge_kernel(Problem<T> pb, int64_t parts, const T* partials, T* dk, T* dv, T* key_bias_share) {
  const int64_t key = thread_index();
  if (key < pb.B * pb.H * pb.N) backward_key_merge(pb, key, parts, partials, dk, dv, key_bias_share);
}

template <typename T>
__global__ void entry_part_kernel(Problem<T> pb, int64_t parts, const T* q, const T* k, const T* v, const T* lse,
                                  const T* D, const T* dout, const int64_t* support, T* partials) {
  const int64_t t = thread_index();
  if (t < pb.H * pb.R * parts)
    backward_entry_part(pb, t / parts, t % parts, parts, q, k, v, lse, D, dout, support,
                        partials + t * (kEntryExtra + pb.Dh));
}

template <typename T>
__global__ void entry_merge_kernel(Problem<T> pb, int64_t parts, const T* partials, TableGrads<T> grads) {
  const int64_t entry = thread_index();
  if (entry < pb.H * pb.R) backward_entry_merge(pb, entry, parts, partials, grads);
}

template <typename T>
__global__ void key_bias_grad_kernel(Problem<T> pb, const T* k, const T* key_bias_share, T* grad) {
  const int64_t hd = thread_index();
  if (hd < pb.H * pb.Dh) key_bias_grad_at(pb, hd, k, key_bias_share, grad);
}

// Launches `kernel` over n threads on `stream` (nothing for n = 0) and checks the launch.
template <typename Kernel, typename... Args>
void launch(const char* name, int64_t n, cudaStream_t stream, Kernel kernel, Args... args) {
  if (n <= 0) return;
  kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream>>>(args...);
  cuda::check_launch("fused attention", name);
}

}  // namespace

template <typename T>
void launch_forward(const Problem<T>& pb, const T* q, const T* k, const T* v, T* out, T* lse, const Scratch<T>& scratch,
                    const Parts& parts, int device) {
  cudaStream_t stream = cuda::context(device).stream;
  const int64_t rows = pb.B * pb.H * pb.Nq;
  launch("forward_part_kernel", rows * parts.rows, stream, forward_part_kernel<T>, pb, parts.rows, q, k, v,
         scratch.forward);
  launch("forward_merge_kernel", rows, stream, forward_merge_kernel<T>, pb, parts.rows,
         static_cast<const T*>(scratch.forward), out, lse);
}

template <typename T>
void launch_backward(const Problem<T>& pb, const T* q, const T* k, const T* v, const T* out, const T* lse,
                     const T* dout, T* dq, T* dk, T* dv, const TableGrads<T>& grads, T* key_bias_grad,
                     const Scratch<T>& scratch, const Parts& parts, int device) {
  cudaStream_t stream = cuda::context(device).stream;
  const int64_t rows = pb.B * pb.H * pb.Nq, keys = pb.B * pb.H * pb.N, entries = pb.H * pb.R;
  const T* D = scratch.D;
  launch("prepare_rows_kernel", rows, stream, prepare_rows_kernel<T>, pb, out, dout, scratch.D, grads.row_prob_mask,
         scratch.support);
  launch("row_part_kernel", rows * parts.rows, stream, row_part_kernel<T>, pb, parts.rows, q, k, v, lse, D, dout,
         grads.row_prob_mask, scratch.rows);
  launch("sum_parts_kernel", rows, stream, sum_parts_kernel<T>, rows, parts.rows, pb.Dh,
         static_cast<const T*>(scratch.rows), dq);
  launch("key_part_kernel", keys * parts.keys, stream, key_part_kernel<T>, pb, parts.keys, q, k, v, lse, D, dout,
         static_cast<const int64_t*>(scratch.support), scratch.keys);
  launch("key_merge_kernel", keys, stream, key_merge_kernel<T>, pb, parts.keys, static_cast<const T*>(scratch.keys),
         dk, dv, scratch.key_bias_share);
  if (wants_entry_grads(grads) && pb.geometry.dims > 0) {
    launch("entry_part_kernel", entries * parts.entries, stream, entry_part_kernel<T>, pb, parts.entries, q, k, v, lse,
           D, dout, static_cast<const int64_t*>(scratch.support), scratch.entries);
    launch("entry_merge_kernel", entries, stream, entry_merge_kernel<T>, pb, parts.entries,
           static_cast<const T*>(scratch.entries), grads);
  }
  if (key_bias_grad)
    launch("key_bias_grad_kernel", pb.H * pb.Dh, stream, key_bias_grad_kernel<T>, pb, k,
           static_cast<const T*>(scratch.key_bias_share), key_bias_grad);
}

#define POSGRAD_FUSED_GPU_INSTANTIATE(T)                                                                          \
  template void launch_forward<T>(const Problem<T>&, const T*, const T*, const T*, T*, T*, const Scratch<T>&,   \
                                  const Parts&, int);                                                         \
  template void launch_backward<T>(const Problem<T>&, const T*, const T*, const T*, const T*, const T*, const T*, \
                                   T*, T*, T*, const TableGrads<T>&, T*, const Scratch<T>&, const Parts&, int);
POSGRAD_FUSED_GPU_INSTANTIATE(float)
POSGRAD_FUSED_GPU_INSTANTIATE(double)
#undef POSGRAD_FUSED_GPU_INSTANTIATE

}  // namespace posgrad::fused_gpu
