// Backend: the small set of primitives each device implements. Ops in tensor/ops.cpp do all
// shape logic (broadcasting, axis moves, output allocation) and then call one primitive, so a
// new device only has to implement this interface. The CPU backend is tensor/cpu/, the CUDA one
// tensor/cuda/.
//
// Conventions for every primitive: `out` is freshly allocated and contiguous unless stated;
// inputs may be strided views (including stride-0 broadcast views) unless stated "contiguous".
// Shapes: letters of shape_legend.h where they apply; local here: R the length of a row (the
// reduced or softmax axis), a GEMM's BLAS sizes [Bt, M, K] @ [Bt, K, N] (Bt its batch), and n, m
// an indexed axis's size and the number of indices.
#pragma once

#include "tensor/ops.h"
#include "tensor/window2d.h"

namespace posgrad {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;

  // dst (any strides, not overlapping itself) <- src (same shape, any strides, any dtype).
  virtual void copy(const Tensor& src, Tensor& dst) = 0;
  virtual void fill(Tensor& dst, double value) = 0;  // dst contiguous
  // out = op(x); x has out's shape. For parametrised ops p and q are the parameters.
  virtual void unary(UnaryOp op, const Tensor& x, Tensor& out, double p, double q) = 0;
  // out = a op b; a and b are already expanded to out's shape (stride 0 where broadcast).
  virtual void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) = 0;
  // out = cond != 0 ? a : b; all expanded to out's shape; cond may have any dtype.
  virtual void where(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out) = 0;
  // dst += src; src expanded to dst's shape, dst contiguous.
  virtual void accumulate(Tensor& dst, const Tensor& src) = 0;

  // x is contiguous [rows, R]; out is [rows]. `correction` is used by Var.
  virtual void reduce_rows(ReduceOp op, const Tensor& x, Tensor& out, int64_t correction) = 0;
  virtual void argmax_rows(const Tensor& x, Tensor& out) = 0;  // out int64 [rows]

  // a [Bt, M, K], b [Bt, K, N] (each matrix row- or column-major; any batch stride), out
  // [Bt, M, N] contiguous.
  virtual void matmul(const Tensor& a, const Tensor& b, Tensor& out) = 0;

  // x, y, dy contiguous [rows, R]: softmax (or log-softmax) along R.
  virtual void softmax_rows(const Tensor& x, Tensor& out, bool log) = 0;
  virtual void softmax_backward_rows(const Tensor& y, const Tensor& dy, Tensor& dx, bool log) = 0;
  // x contiguous [rows, D]; weight/bias [D] or undefined; mean/rstd [rows].
  virtual void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                          Tensor& y, Tensor& mean, Tensor& rstd) = 0;
  // dweight/dbias may be undefined (no affine).
  virtual void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                   const Tensor& mean, const Tensor& rstd, Tensor& dx,
                                   Tensor& dweight, Tensor& dbias) = 0;

  // x contiguous [outer, n, inner]; index int64 contiguous [m]; out [outer, m, inner].
  virtual void index_select(const Tensor& x, const Tensor& index, Tensor& out) = 0;
  // out contiguous zeroed [outer, n, inner] += src [outer, m, inner] at rows index [m].
  virtual void index_add(const Tensor& index, const Tensor& src, Tensor& out) = 0;
  // x contiguous [outer, n, inner]; index and out contiguous [outer, m, inner].
  virtual void gather(const Tensor& x, const Tensor& index, Tensor& out) = 0;
  // out contiguous zeroed [outer, n, inner]; index and src contiguous [outer, m, inner].
  virtual void scatter_add(const Tensor& index, const Tensor& src, Tensor& out) = 0;

  // Sliding 2-D windows (tensor/window2d.h: Y, X, Yo, Xo, k). im2col: x contiguous
  // [B, C, Y, X] -> cols contiguous [B, k, Yo * Xo], row c * kh * kw + i * kw + j holding tap
  // (i, j) of channel c for every output position (0 where the tap falls in the padding).
  virtual void im2col(const Tensor& x, const Window2d& window, Tensor& cols) = 0;
  // The adjoint: x contiguous [B, C, Y, X] is overwritten with the sum, over taps, of the cols
  // entries that read each input element.
  virtual void col2im(const Tensor& cols, const Window2d& window, Tensor& x) = 0;
  // x contiguous [P, Y, X] (P planes) -> out [P, Yo, Xo] the max over each window's cells inside
  // the plane, argmax int64 [P, Yo, Xo] the flat index y * X + x of the first maximum.
  virtual void max_pool2d(const Tensor& x, const Window2d& window, Tensor& out, Tensor& argmax) = 0;

  // Fills contiguous `out` from Philox(seed) starting at block `offset` (see random.h).
  virtual void random(RandomKind kind, Tensor& out, double a, double b, uint64_t seed,
                      uint64_t offset) = 0;
};

Backend& backend_for(Device device);
Backend& cpu_backend();
// The CUDA backend registers itself here when linked in.
void register_cuda_backend(Backend* backend);

}  // namespace posgrad
