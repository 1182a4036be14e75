// Sweep statistics (see sweep_stats.h).
#include "apps/common/sweep_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tensor/error.h"

namespace posgrad::apps {

ArmStats arm_stats(const std::vector<double>& values) {
  ArmStats s;
  s.n = static_cast<int>(values.size());
  if (values.empty()) {
    s.max = s.mean = s.sd = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  s.max = *std::max_element(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / s.n;
  if (s.n < 2) {
    s.sd = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  double squares = 0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(squares / (s.n - 1));
  return s;
}

namespace {

// The continued fraction of I_x(a, b) (converges fast for x < (a + 1) / (a + b + 2)).
double beta_continued_fraction(double x, double a, double b) {
  constexpr double tiny = 1e-300, eps = 1e-15;
  double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::abs(d) < tiny) d = tiny;
  d = 1.0 / d;
  double f = d;
  for (int m = 1; m <= 500; ++m) {
    // Even step: d_{2m} = m (b - m) x / ((a + 2m - 1)(a + 2m)).
    const double even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
    d = 1.0 + even * d;
    c = 1.0 + even / c;
    if (std::abs(d) < tiny) d = tiny;
    if (std::abs(c) < tiny) c = tiny;
    d = 1.0 / d;
    f *= c * d;
    // Odd step: d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)).
    const double odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
    d = 1.0 + odd * d;
    c = 1.0 + odd / c;
    if (std::abs(d) < tiny) d = tiny;
    if (std::abs(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double step = c * d;
    f *= step;
    if (std::abs(step - 1.0) < eps) break;
  }
  return f;
}

}  // namespace

double regularized_incomplete_beta(double x, double a, double b) {
  if (!(x >= 0 && x <= 1) || !(a > 0) || !(b > 0))
    fail("regularized_incomplete_beta: need x in [0, 1] and a, b > 0 (got x {}, a {}, b {})", x, a, b);
  if (x == 0 || x == 1) return x;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(log_front);
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(x, a, b) / a;
  return 1.0 - front * beta_continued_fraction(1.0 - x, b, a) / b;
}

double student_t_two_sided_p(double t, double df) {
  if (!(df > 0)) fail("student_t_two_sided_p: df must be > 0, got {}", df);
  if (!std::isfinite(t)) return 0.0;
  return regularized_incomplete_beta(df / (df + t * t), df / 2.0, 0.5);
}

std::optional<WelchResult> welch_t_test(const ArmStats& a, const ArmStats& b) {
  if (a.n < 2 || b.n < 2) return std::nullopt;
  const double va = a.sd * a.sd / a.n, vb = b.sd * b.sd / b.n;
  if (va + vb <= 0) return std::nullopt;
  WelchResult r;
  r.effect = b.mean - a.mean;
  r.t = r.effect / std::sqrt(va + vb);
  r.df = (va + vb) * (va + vb) / (va * va / (a.n - 1) + vb * vb / (b.n - 1));
  r.p = student_t_two_sided_p(r.t, r.df);
  return r;
}

std::optional<WelchResult> welch_t_test(const std::vector<double>& a, const std::vector<double>& b) {
  return welch_t_test(arm_stats(a), arm_stats(b));
}

}  // namespace posgrad::apps
