// Rotation angles of orthogonal matrices (see rotation_angles.h).
#include "apps/common/rotation_angles.h"

#include <algorithm>
#include <cmath>

namespace posgrad::apps {

namespace {

// Eigenvalues of the symmetric d x d matrix s (row-major), by cyclic Jacobi rotations.
std::vector<double> symmetric_eigenvalues(std::vector<double> s, int64_t d) {
  auto at = [&](int64_t i, int64_t j) -> double& { return s[static_cast<size_t>(i * d + j)]; };
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = i + 1; j < d; ++j) off += at(i, j) * at(i, j);
    if (off < 1e-24) break;
    for (int64_t p = 0; p < d; ++p)
      for (int64_t q = p + 1; q < d; ++q) {
        if (std::abs(at(p, q)) < 1e-300) continue;
        const double theta = (at(q, q) - at(p, p)) / (2 * at(p, q));
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double cs = 1 / std::sqrt(t * t + 1), sn = t * cs;
        for (int64_t k = 0; k < d; ++k) {  // columns p, q
          const double a = at(k, p), b = at(k, q);
          at(k, p) = cs * a - sn * b;
          at(k, q) = sn * a + cs * b;
        }
        for (int64_t k = 0; k < d; ++k) {  // rows p, q
          const double a = at(p, k), b = at(q, k);
          at(p, k) = cs * a - sn * b;
          at(q, k) = sn * a + cs * b;
        }
      }
  }
  std::vector<double> out;
  for (int64_t i = 0; i < d; ++i) out.push_back(at(i, i));
  return out;
}

}  // namespace

std::vector<double> rotation_angles(const std::vector<double>& w, int64_t d) {
  std::vector<double> s(static_cast<size_t>(d * d));
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < d; ++j) s[i * d + j] = 0.5 * (w[i * d + j] + w[j * d + i]);
  std::vector<double> cosines = symmetric_eigenvalues(s, d);
  std::vector<double> angles;
  for (double c : cosines) angles.push_back(std::acos(std::clamp(c, -1.0, 1.0)));
  std::sort(angles.begin(), angles.end());
  std::vector<double> pairs;  // each angle appears twice (an odd d adds one angle 0)
  for (size_t i = d % 2; i < angles.size(); i += 2) pairs.push_back(angles[i]);
  return pairs;
}

std::vector<std::vector<double>> rotation_angles_of(const Tensor& matrices) {
  const int64_t G = matrices.size(0), d = matrices.size(1);
  const auto w = matrices.to(kCPU).to(kFloat64).contiguous().to_vector<double>();
  std::vector<std::vector<double>> out;
  for (int64_t g = 0; g < G; ++g) {
    const auto first = w.begin() + g * d * d;
    out.push_back(rotation_angles(std::vector<double>(first, first + d * d), d));
  }
  return out;
}

}  // namespace posgrad::apps
