// The CPU backend: OpenMP kernels for every Backend primitive. Each family of primitives is in
// its own file (elementwise.cpp, reduce.cpp, matmul.cpp, softmax.cpp, layernorm.cpp, window2d.cpp,
// indexing.cpp, which also holds the random fills); this header only declares the class.
#pragma once

#include "tensor/backend.h"

namespace posgrad::cpu {

class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }
  void copy(const Tensor& src, Tensor& dst) override;
  void fill(Tensor& dst, double value) override;
  void unary(UnaryOp op, const Tensor& x, Tensor& out, double p, double q) override;
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) override;
  void where(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out) override;
  void accumulate(Tensor& dst, const Tensor& src) override;
  void reduce_rows(ReduceOp op, const Tensor& x, Tensor& out, int64_t correction) override;
  void argmax_rows(const Tensor& x, Tensor& out) override;
  void matmul(const Tensor& a, const Tensor& b, Tensor& out) override;
  void softmax_rows(const Tensor& x, Tensor& out, bool log) override;
  void softmax_backward_rows(const Tensor& y, const Tensor& dy, Tensor& dx, bool log) override;
  void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& y,
                  Tensor& mean, Tensor& rstd) override;
  void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                           const Tensor& mean, const Tensor& rstd, Tensor& dx, Tensor& dweight,
                           Tensor& dbias) override;
  void index_select(const Tensor& x, const Tensor& index, Tensor& out) override;
  void index_add(const Tensor& index, const Tensor& src, Tensor& out) override;
  void gather(const Tensor& x, const Tensor& index, Tensor& out) override;
  void scatter_add(const Tensor& index, const Tensor& src, Tensor& out) override;
  void im2col(const Tensor& x, const Window2d& window, Tensor& cols) override;
  void col2im(const Tensor& cols, const Window2d& window, Tensor& x) override;
  void max_pool2d(const Tensor& x, const Window2d& window, Tensor& out, Tensor& argmax) override;
  void random(RandomKind kind, Tensor& out, double a, double b, uint64_t seed,
              uint64_t offset) override;
};

}  // namespace posgrad::cpu
