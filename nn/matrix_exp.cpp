// matrix_exp (see matrix_exp.h): scaling and squaring with a degree-18 Taylor polynomial, and the
// exact backward through the block-triangular identity. Matrices of a batch are flattened to
// [P, d, d]; each gets its own number of squarings s (chosen on the host from its 1-norm), and a
// batch squares max(s) times, keeping the previous value (with `where`) for matrices already done.
// Shapes: letters of shape_legend.h, except P here: the number of d x d matrices in the batch.
#include "nn/matrix_exp.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "tensor/ops.h"

namespace posgrad {

namespace {

// Checks that x is a float batch of square matrices [..., d, d]; `op` names the caller.
void check_square_batch(const Tensor& x, const char* op) {
  if (!x.defined()) fail("{}: input is undefined", op);
  if (!is_floating(x.dtype())) fail("{}: expected float32 or float64, got {}", op, x.describe());
  if (x.dim() < 2 || x.size(-1) != x.size(-2))
    fail("{}: expected a batch of square matrices [..., d, d], got {}", op, x.describe());
}

// 1-norm (largest absolute column sum) of every matrix of m [P, d, d], read back to the host.
std::vector<double> one_norms(const Tensor& m) { return amax(sum(abs(m), {1}), {1}).to_vector<double>(); }

// A per-matrix factor column [P, 1, 1] in like's dtype and on its device (broadcasts over d, d).
Tensor per_matrix(const std::vector<double>& values, const Tensor& like) {
  const int64_t p = static_cast<int64_t>(values.size());
  return Tensor::from_vector(values, {p, 1, 1}).to(like.dtype()).to(like.device());
}

// I [n, n] in like's dtype and on its device, from a comparison of two aranges.
Tensor identity_like(int64_t n, const Tensor& like) {
  const Tensor r = Tensor::arange(n, like.dtype(), like.device());
  return eq(r.reshape({n, 1}), r.reshape({1, n}));
}

// The smallest s >= 0 with norm / 2^s <= kMatrixExpNormBound. A non-finite norm (a NaN or inf
// entry, possible only in the backward's upstream gradient) gets 0: the NaN then propagates.
int squarings_for(double norm) {
  if (!std::isfinite(norm)) return 0;
  int s = 0;
  while (std::ldexp(norm, -s) > kMatrixExpNormBound) ++s;
  return s;
}

// The degree-18 Taylor polynomial sum_k z^k / k! for z [P, d, d], Paterson-Stockmeyer with block
// size 4: with powers I, z, z^2, z^3, z^4 (3 matmuls) and blocks B_j = sum_i c_{4j+i} z^i,
// p(z) = B_0 + z^4 (B_1 + z^4 (B_2 + z^4 (B_3 + z^4 B_4))) (4 more matmuls), B_4 = c16 + c17 z + c18 z^2.
Tensor taylor18(const Tensor& z) {
  static_assert(kMatrixExpTaylorDegree == 18, "taylor18 is written for degree 18");
  std::array<double, 19> c{};
  c[0] = 1.0;
  for (int k = 1; k <= 18; ++k) c[static_cast<size_t>(k)] = c[static_cast<size_t>(k - 1)] / k;
  const Tensor eye = identity_like(z.size(-1), z);
  const Tensor z2 = matmul(z, z), z3 = matmul(z2, z), z4 = matmul(z2, z2);
  const Tensor* powers[] = {&z, &z2, &z3};
  // B_j with terms c_{4j} I + c_{4j+1} z + ... + c_{4j+top} z^top.
  auto block = [&](int j, int top) {
    Tensor b = mul_scalar(z, c[static_cast<size_t>(4 * j + 1)]);
    for (int i = 2; i <= top; ++i) b = b + mul_scalar(*powers[i - 1], c[static_cast<size_t>(4 * j + i)]);
    return b + mul_scalar(eye, c[static_cast<size_t>(4 * j)]);
  };
  Tensor acc = block(4, 2);
  for (int j = 3; j >= 0; --j) acc = block(j, 3) + matmul(z4, acc);
  return acc;
}

// e^m for m [P, d, d]: the one forward routine, used by the forward and by the backward's block
// matrix.
Tensor expm_batch(const Tensor& m) {
  const std::vector<double> norms = one_norms(m);
  const size_t p = norms.size();
  std::vector<int> s(p);
  std::vector<double> scale(p);
  int smax = 0;
  for (size_t i = 0; i < p; ++i) {
    s[i] = squarings_for(norms[i]);
    scale[i] = std::ldexp(1.0, -s[i]);
    smax = std::max(smax, s[i]);
  }
  Tensor y = taylor18(smax > 0 ? m * per_matrix(scale, m) : m);
  for (int k = 1; k <= smax; ++k) {
    Tensor squared = matmul(y, y);
    const bool all = std::all_of(s.begin(), s.end(), [k](int si) { return si >= k; });
    if (all) {
      y = squared;
    } else {
      std::vector<double> keep(p);
      for (size_t i = 0; i < p; ++i) keep[i] = s[i] >= k ? 1.0 : 0.0;
      y = where(per_matrix(keep, m), squared, y);
    }
  }
  return y;
}

}  // namespace

Tensor matrix_exp(const Tensor& x) {
  check_square_batch(x, "matrix_exp");
  if (x.numel() == 0) return x.clone();
  // Any inf or NaN makes x * 0 hold a NaN, whatever the reductions do with infinities.
  if (!std::isfinite(sum(x * 0.0).item())) fail("matrix_exp: input {} has inf or NaN entries", x.describe());
  const int64_t d = x.size(-1);
  const Tensor m = x.reshape({x.numel() / (d * d), d, d});
  for (double n : one_norms(m))
    if (!std::isfinite(n)) fail("matrix_exp: the 1-norm of a matrix of {} overflows", x.describe());
  return expm_batch(m).reshape(x.shape());
}

Tensor matrix_exp_backward(const Tensor& x, const Tensor& grad) {
  check_square_batch(x, "matrix_exp_backward");
  if (!grad.defined() || grad.shape() != x.shape() || grad.dtype() != x.dtype())
    fail("matrix_exp_backward: gradient {} must match the input {}", grad.defined() ? grad.describe() : "undefined",
         x.describe());
  if (x.numel() == 0) return Tensor::zeros_like(x);
  const int64_t d = x.size(-1), p = x.numel() / (d * d);
  const Tensor xm = x.reshape({p, d, d}), gm = grad.reshape({p, d, d});

  // Scale each G by a power of two c so that ||G / c||_1 ~ max(||X||_1, 1): the block's norm
  // then needs at most one squaring more than X's. L is linear in G, so L(X^T, G) = c L(X^T, G/c),
  // and power-of-two scalings are exact.
  const std::vector<double> xn = one_norms(xm), gn = one_norms(gm);
  std::vector<double> c(static_cast<size_t>(p)), inv_c(static_cast<size_t>(p));
  for (size_t i = 0; i < c.size(); ++i) {
    int e = 0;
    if (std::isfinite(gn[i]) && gn[i] > 0)
      e = std::clamp(static_cast<int>(std::lround(std::log2(gn[i] / std::max(xn[i], 1.0)))), -900, 900);
    c[i] = std::ldexp(1.0, e);
    inv_c[i] = std::ldexp(1.0, -e);
  }
  const Tensor xt = xm.transpose(1, 2);
  const Tensor gs = gm * per_matrix(inv_c, gm);
  // [[X^T, G/c], [0, X^T]]  [P, 2d, 2d]
  const Tensor zero = Tensor::zeros({p, d, d}, x.dtype(), x.device());
  using Tensors = std::vector<Tensor>;  // not Variables: autograd's cat(vector<Variable>) is visible too
  const Tensor blockm = cat(Tensors{cat(Tensors{xt, gs}, 2), cat(Tensors{zero, xt}, 2)}, 1);
  const Tensor e = expm_batch(blockm);
  const Tensor l = e.narrow(1, 0, d).narrow(2, d, d) * per_matrix(c, e);
  return l.reshape(x.shape());
}

Variable matrix_exp(const Variable& x) {
  const Tensor xv = x.value();
  return record("matrix_exp", matrix_exp(xv), {x}, [xv](const Tensor& g, const std::vector<bool>&) {
    return std::vector<Tensor>{matrix_exp_backward(xv, g)};
  });
}

}  // namespace posgrad
