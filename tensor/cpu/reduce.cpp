// CPU reductions over the last axis of a contiguous [rows, R] matrix (the op front-end moves the
// reduced axes last). Sums accumulate in double for float32 inputs, so long rows stay accurate.
// Shapes: letters of shape_legend.h, except R here: the length of one row (the reduced axis).
#include <cmath>
#include <limits>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/parallel.h"

namespace posgrad::cpu {

namespace {
template <typename T>
using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
}

void CpuBackend::reduce_rows(ReduceOp op, const Tensor& x, Tensor& out, int64_t correction) {
  const int64_t rows = x.size(0), R = x.size(1);
  dispatch_all(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* op_ = out.data<T>();
    parallel_for(rows, R, [&](int64_t r) {
      const T* row = xp + r * R;
      switch (op) {
        case ReduceOp::Sum:
        case ReduceOp::Mean: {
          Acc<T> s = 0;
          for (int64_t i = 0; i < R; ++i) s += row[i];
          op_[r] = op == ReduceOp::Sum ? static_cast<T>(s)
                                       : static_cast<T>(static_cast<double>(s) / static_cast<double>(R));
          break;
        }
        case ReduceOp::Max: {
          T m = row[0];
          for (int64_t i = 1; i < R; ++i) m = (row[i] > m || row[i] != row[i]) ? row[i] : m;
          op_[r] = m;
          break;
        }
        case ReduceOp::Min: {
          T m = row[0];
          for (int64_t i = 1; i < R; ++i) m = (row[i] < m || row[i] != row[i]) ? row[i] : m;
          op_[r] = m;
          break;
        }
        case ReduceOp::Var: {
          double s = 0;
          for (int64_t i = 0; i < R; ++i) s += static_cast<double>(row[i]);
          const double mu = s / static_cast<double>(R);
          double ss = 0;
          for (int64_t i = 0; i < R; ++i) {
            const double d = static_cast<double>(row[i]) - mu;
            ss += d * d;
          }
          const double denom = static_cast<double>(R - correction);
          op_[r] = static_cast<T>(denom > 0 ? ss / denom : std::numeric_limits<double>::quiet_NaN());
          break;
        }
      }
    });
  });
}

void CpuBackend::argmax_rows(const Tensor& x, Tensor& out) {
  const int64_t rows = x.size(0), R = x.size(1);
  dispatch_all(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    int64_t* op_ = out.data<int64_t>();
    parallel_for(rows, R, [&](int64_t r) {
      const T* row = xp + r * R;
      int64_t best = 0;
      for (int64_t i = 1; i < R; ++i)
        if (row[i] > row[best]) best = i;
      op_[r] = best;
    });
  });
}

}  // namespace posgrad::cpu
