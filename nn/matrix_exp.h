// matrix_exp: the matrix exponential e^X = I + X + X^2/2! + ... of a batch of square matrices,
// differentiable, for float32 and float64. Built only from tensor ops (matmul, elementwise,
// cat, where), so it runs on any backend that implements those.
//
// Forward: scaling and squaring. Per matrix, s is the smallest integer with ||X / 2^s||_1 <= 1;
// e^(X / 2^s) is the degree-18 Taylor polynomial, evaluated Paterson-Stockmeyer style
// (powers X^2..X^4, then Horner in X^4: 7 matmuls), and is squared s times. For ||Z||_1 <= 1 the
// truncation error is at most sum_{k>=19} 1/k! ~ 8.7e-18 <= 0.08 u (u = 2^-53), relative to
// ||e^Z||_1 >= e^-1 at most 0.21 u: the approximant is accurate to float64 rounding.
//
// Backward: exact, with no finite differences and no series truncation beyond the forward's.
// For an upstream gradient G, dL/dX is the adjoint Frechet derivative L(X^T, G), read off the
// upper-right block of exp([[X^T, G], [0, X^T]]) = [[e^(X^T), L(X^T, G)], [0, e^(X^T)]],
// computed with the same forward routine on the 2d x 2d block matrix. G is first scaled per
// matrix by a power of two (undone afterwards, exactly) so that its size does not add squarings.
//
// Deliberately not here: Pade approximants (they need a linear solve, which the op set lacks),
// the matrix logarithm, exp of a matrix times a vector, and double backward (the backward is
// not itself recorded).
#pragma once

#include "autograd/variable.h"
#include "tensor/tensor.h"

namespace posgrad {

// x [..., d, d] -> e^x [..., d, d], float32 or float64. Errors (posgrad::Error, naming
// "matrix_exp" and the input): rank < 2, a non-square last pair of axes, an integer dtype, or
// any inf/NaN entry.
Tensor matrix_exp(const Tensor& x);
Variable matrix_exp(const Variable& x);

// The backward of matrix_exp: for x [..., d, d] and an upstream gradient g of the same shape,
// returns L(x^T, g), the gradient of sum(g * e^x) with respect to x. Non-finite entries of g
// give non-finite gradients (no error), as any other backward would.
Tensor matrix_exp_backward(const Tensor& x, const Tensor& grad);

// The constants of the forward approximant, for documentation and tests.
inline constexpr int kMatrixExpTaylorDegree = 18;
inline constexpr double kMatrixExpNormBound = 1.0;  // ||X / 2^s||_1 <= this before the Taylor step

}  // namespace posgrad
