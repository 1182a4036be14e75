// CPU batched matmul: out[b] = a[b] @ b[b] for each batch b. Each matrix may be row-major or
// transposed (column-major) with any leading dimension; that becomes a GEMM transpose flag, so
// transposed views never get copied. Small matrices in large batches are parallelised over the
// batch (GEMM then runs single-threaded inside); big ones let GEMM use every thread. Under bf16
// autocast (tensor/autocast.h) float32 operands are first rounded to bf16 copies.
#include <algorithm>

#include "tensor/autocast.h"

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/gemm.h"
#include "tensor/cpu/parallel.h"
#include "tensor/matrix_layout.h"

namespace posgrad::cpu {

void CpuBackend::matmul(const Tensor& a_in, const Tensor& b_in, Tensor& out) {
  const bool bf16 = a_in.dtype() == kFloat32 && autocast_bf16();
  Tensor a = bf16 ? rounded_to_bf16(a_in) : a_in, b = bf16 ? rounded_to_bf16(b_in) : b_in;
  const MatrixLayout la = gemm_operand(a), lb = gemm_operand(b);
  const int64_t batch = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  dispatch_float(a.dtype(), "matmul", [&]<typename T>() {
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    T* op = out.data<T>();
    const int64_t sa = a.stride(0), sb = b.stride(0);
    auto one = [&](int64_t i) {
      if constexpr (std::is_same_v<T, float>)
        sgemm(la.trans, lb.trans, M, N, K, 1.0f, ap + i * sa, la.ld, bp + i * sb, lb.ld, 0.0f,
              op + i * M * N, N);
      else
        dgemm(la.trans, lb.trans, M, N, K, 1.0, ap + i * sa, la.ld, bp + i * sb, lb.ld, 0.0,
              op + i * M * N, N);
    };
    // One big matrix: let GEMM thread internally. Many small ones: thread over the batch.
    const int64_t flops = M * N * K;
    if (batch >= 2 * max_threads() || flops < 64 * 64 * 64) {
      parallel_for(batch, flops, one);
    } else {
      for (int64_t i = 0; i < batch; ++i) one(i);
    }
  });
}

}  // namespace posgrad::cpu
