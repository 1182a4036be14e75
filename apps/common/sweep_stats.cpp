// Sweep statistics (see sweep_stats.h).
#include "apps/common/sweep_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <boost/math/distributions/students_t.hpp>

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

double student_t_two_sided_p(double t, double df) {
  if (!(df > 0)) fail("student_t_two_sided_p: df must be > 0, got {}", df);
  if (std::isnan(t)) fail("student_t_two_sided_p: t is NaN");
  if (!std::isfinite(t)) return 0.0;
  return 2.0 * boost::math::cdf(boost::math::complement(boost::math::students_t(df), std::abs(t)));
}

double student_t_quantile(double q, double df) {
  if (!(df > 0)) fail("student_t_quantile: df must be > 0, got {}", df);
  if (!(q > 0 && q < 1)) fail("student_t_quantile: q must be in (0, 1), got {}", q);
  return boost::math::quantile(boost::math::students_t(df), q);
}

double ci95_half_width(const ArmStats& s) {
  if (s.n < 2 || !std::isfinite(s.sd)) return std::numeric_limits<double>::quiet_NaN();
  return student_t_quantile(0.975, s.n - 1) * s.sd / std::sqrt(static_cast<double>(s.n));
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
