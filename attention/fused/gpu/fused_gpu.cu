// The GPU fused attention's kernels: fused_gpu_passes.h's passes, each launched as one kernel of
// one thread per index on the device's stream, which orders them (tensor/cuda/context.h). Every
// thread writes only what it owns (fused_gpu_math.h), so nothing needs atomics.
// Deliberately not here: blocks of queries sharing their keys in shared memory, tensor cores
// (a thread reads its keys through L1/L2); the host side (fused_gpu.cpp, fused_attention.cpp).
#include "attention/fused/gpu/fused_gpu_passes.h"
#include "tensor/cuda/context.h"

namespace posgrad::fused_gpu {

namespace {

constexpr int kThreadsPerBlock = 128;

template <class Fn>
__global__ void each_thread(int64_t threads, Fn fn) {
  const int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (t < threads) fn(t);
}

// Runs a pass as a kernel on `stream` (nothing for no threads) and checks the launch.
struct DeviceRun {
  cudaStream_t stream;
  template <class Fn>
  void operator()(const char* name, int64_t threads, const Fn& fn) const {
    if (threads <= 0) return;
    const auto blocks = static_cast<unsigned>((threads + kThreadsPerBlock - 1) / kThreadsPerBlock);
    each_thread<<<blocks, kThreadsPerBlock, 0, stream>>>(threads, fn);
    cuda::check_launch("fused attention", name);
  }
};

}  // namespace

template <typename T>
void launch_forward(const Problem<T>& pb, const T* q, const T* k, const T* v, T* out, T* lse, const Scratch<T>& scratch,
                    const Parts& parts, int device) {
  forward_passes(DeviceRun{cuda::context(device).stream}, pb, q, k, v, out, lse, scratch, parts);
}

template <typename T>
void launch_backward(const Problem<T>& pb, const T* q, const T* k, const T* v, const T* out, const T* lse,
                     const T* dout, T* dq, T* dk, T* dv, const TableGrads<T>& grads,
                     const Scratch<T>& scratch, const Parts& parts, int device) {
  backward_passes(DeviceRun{cuda::context(device).stream}, pb, q, k, v, out, lse, dout, dq, dk, dv, grads, scratch,
                  parts);
}

#define POSGRAD_FUSED_GPU_INSTANTIATE(T)                                                                          \
  template void launch_forward<T>(const Problem<T>&, const T*, const T*, const T*, T*, T*, const Scratch<T>&,   \
                                  const Parts&, int);                                                         \
  template void launch_backward<T>(const Problem<T>&, const T*, const T*, const T*, const T*, const T*, const T*, \
                                   T*, T*, T*, const TableGrads<T>&, const Scratch<T>&, const Parts&, int);
POSGRAD_FUSED_GPU_INSTANTIATE(float)
POSGRAD_FUSED_GPU_INSTANTIATE(double)
#undef POSGRAD_FUSED_GPU_INSTANTIATE

}  // namespace posgrad::fused_gpu
