// The rotation angles of orthogonal matrices (APE's generators W = exp(A - A^T), for figures):
// the theta of the eigenvalues e^(+-i theta) of W, read off the symmetric part (W + W^T) / 2,
// whose eigenvalues are the cos theta, each twice (cyclic Jacobi eigenvalue iteration in double),
// shown in increasing order, one per conjugate pair (an odd d adds one angle 0, dropped).
// Deliberately does not: check that the matrix is orthogonal, or draw anything.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace posgrad::apps {

// The rotation angles (radians, increasing, one per conjugate pair) of the orthogonal d x d
// matrix w (row-major).
std::vector<double> rotation_angles(const std::vector<double>& w, int64_t d);

// The angles of each matrix of matrices [G, d, d], in order.
std::vector<std::vector<double>> rotation_angles_of(const Tensor& matrices);

}  // namespace posgrad::apps
