// The GPU fused attention's passes (fused_gpu_passes.h) run where they are asked to (fused_gpu.h):
// on a GPU through fused_gpu.cu, or on the host, one "thread" of each pass after another (the
// tests' emulation of the GPU kernels), and the number of parts per row.
// Deliberately not here: CUDA code (fused_gpu.cu).
#include "attention/fused/gpu/fused_gpu.h"
#include "attention/fused/gpu/fused_gpu_passes.h"

#include <algorithm>

#include "tensor/error.h"

namespace posgrad::fused_gpu {

namespace {

// Runs a pass on the host: thread after thread.
struct HostRun {
  template <class Fn>
  void operator()(const char* /*name*/, int64_t threads, const Fn& fn) const {
    for (int64_t t = 0; t < threads; ++t) fn(t);
  }
};

// Parts for `rows` rows of at most `work` items each: enough threads to fill a GPU, and parts of
// at least 32 items.
int64_t parts_for(int64_t rows, int64_t work) {
  constexpr int64_t kTargetThreads = int64_t{1} << 18, kLeastWork = 32;
  const int64_t wanted = rows > 0 ? (kTargetThreads + rows - 1) / rows : 1;
  return std::max<int64_t>(1, std::min(wanted, work / kLeastWork));
}

// The most keys a query sees (and queries a key is seen by): the offset box's volume within the
// grids, at most `all`.
int64_t box_volume(const Geometry& g, int64_t all) {
  if (g.dims == 0) return all;  // no grid: every key
  int64_t volume = 1;
  for (int d = 0; d < g.dims; ++d)
    volume *= std::max<int64_t>(0, std::min(g.hi[d], g.key_size[d] - 1) - std::max(g.lo[d], -(g.query_size[d] - 1)) + 1);
  return std::min(volume, all);
}

}  // namespace

template <typename T>
Parts Parts::plan(const Problem<T>& pb, const Where& where) {
  if (where.parts > 0) return {where.parts, where.parts, where.parts};
  const Geometry& g = pb.geometry;
  return {parts_for(pb.B * pb.H * pb.Nq, box_volume(g, pb.N)), parts_for(pb.B * pb.H * pb.N, box_volume(g, pb.Nq)),
          parts_for(pb.H * pb.R, pb.B * pb.Nq)};
}

template <typename T>
void forward(const Problem<T>& pb, const T* q, const T* k, const T* v, T* out, T* lse, const Scratch<T>& scratch,
             const Parts& parts, Where where) {
  if (where.host) return forward_passes(HostRun{}, pb, q, k, v, out, lse, scratch, parts);
#ifdef POSGRAD_HAVE_CUDA
  launch_forward(pb, q, k, v, out, lse, scratch, parts, where.device);
#else
  fail("fused attention on a GPU: this build has no CUDA backend");
#endif
}

template <typename T>
void backward(const Problem<T>& pb, const T* q, const T* k, const T* v, const T* out, const T* lse, const T* dout,
              T* dq, T* dk, T* dv, const TableGrads<T>& grads, const Scratch<T>& scratch,
              const Parts& parts, Where where) {
  if (grads[kKeyBias] && !scratch.key_bias_share) fail("fused attention on a GPU: the key bias gradient needs its scratch");
  if (pb.tables[kRowProbMask] && !scratch.support) fail("fused attention on a GPU: a row mask needs its supports' scratch");
  if (where.host)
    return backward_passes(HostRun{}, pb, q, k, v, out, lse, dout, dq, dk, dv, grads, scratch, parts);
#ifdef POSGRAD_HAVE_CUDA
  launch_backward(pb, q, k, v, out, lse, dout, dq, dk, dv, grads, scratch, parts, where.device);
#else
  fail("fused attention on a GPU: this build has no CUDA backend");
#endif
}

#define POSGRAD_FUSED_GPU_INSTANTIATE(T)                                                                              \
  template Parts Parts::plan<T>(const Problem<T>&, const Where&);                                                  \
  template void forward<T>(const Problem<T>&, const T*, const T*, const T*, T*, T*, const Scratch<T>&, const Parts&, \
                           Where);                                                                                 \
  template void backward<T>(const Problem<T>&, const T*, const T*, const T*, const T*, const T*, const T*, T*, T*, \
                            T*, const TableGrads<T>&, const Scratch<T>&, const Parts&, Where);
POSGRAD_FUSED_GPU_INSTANTIATE(float)
POSGRAD_FUSED_GPU_INSTANTIATE(double)
#undef POSGRAD_FUSED_GPU_INSTANTIATE

}  // namespace posgrad::fused_gpu
