// The GPU fused attention's passes run where they are asked to (fused_gpu.h): on a GPU through
// fused_gpu.cu, or on the host, one "thread" of each pass after another (the tests' emulation of
// the GPU kernels: the same arithmetic, fused_gpu_math.h, in the same order per thread).
// Deliberately not here: CUDA code (fused_gpu.cu).
#include "attention/fused/gpu/fused_gpu.h"

#include "tensor/error.h"

namespace posgrad::fused_gpu {

template <typename T>
void forward(const Problem<T>& pb, const T* q, const T* k, const T* v, T* out, T* lse, Where where) {
  if (!where.host) {
#ifdef POSGRAD_HAVE_CUDA
    return launch_forward(pb, q, k, v, out, lse, where.device);
#else
    fail("fused attention on a GPU: this build has no CUDA backend");
#endif
  }
  for (int64_t row = 0; row < pb.B * pb.H * pb.Nq; ++row) forward_row(pb, row, q, k, v, out, lse);
}

template <typename T>
void backward(const Problem<T>& pb, const T* q, const T* k, const T* v, const T* out, const T* lse, const T* dout,
              T* dq, T* dk, T* dv, const TableGrads<T>& grads, T* key_bias_grad, const BackwardScratch<T>& scratch,
              Where where) {
  if (key_bias_grad && !scratch.key_bias_share) fail("fused attention on a GPU: the key bias gradient needs its scratch");
  if (pb.tables.row_prob_mask && !scratch.support) fail("fused attention on a GPU: a row mask needs its supports' scratch");
  if (!where.host) {
#ifdef POSGRAD_HAVE_CUDA
    return launch_backward(pb, q, k, v, out, lse, dout, dq, dk, dv, grads, key_bias_grad, scratch, where.device);
#else
    fail("fused attention on a GPU: this build has no CUDA backend");
#endif
  }
  for (int64_t row = 0; row < pb.B * pb.H * pb.Nq; ++row)
    backward_row(pb, row, q, k, v, out, lse, dout, scratch.D, dq, grads.row_prob_mask, scratch.support);
  for (int64_t key = 0; key < pb.B * pb.H * pb.N; ++key)
    backward_key(pb, key, q, k, v, lse, scratch.D, dout, scratch.support, dk, dv, scratch.key_bias_share);
  const bool tables = grads.query_table || grads.bias || grads.modulation || grads.positional_modulation ||
                      grads.prob_mask;
  if (tables && pb.geometry.dims > 0)
    for (int64_t entry = 0; entry < pb.H * pb.R; ++entry)
      backward_entry(pb, entry, q, k, v, lse, scratch.D, dout, scratch.support, grads);
  if (key_bias_grad)
    for (int64_t hd = 0; hd < pb.H * pb.Dh; ++hd) key_bias_grad_at(pb, hd, k, scratch.key_bias_share, key_bias_grad);
}

template void forward<float>(const Problem<float>&, const float*, const float*, const float*, float*, float*, Where);
template void forward<double>(const Problem<double>&, const double*, const double*, const double*, double*, double*,
                              Where);
template void backward<float>(const Problem<float>&, const float*, const float*, const float*, const float*,
                              const float*, const float*, float*, float*, float*, const TableGrads<float>&, float*,
                              const BackwardScratch<float>&, Where);
template void backward<double>(const Problem<double>&, const double*, const double*, const double*, const double*,
                               const double*, const double*, double*, double*, double*, const TableGrads<double>&,
                               double*, const BackwardScratch<double>&, Where);

}  // namespace posgrad::fused_gpu
