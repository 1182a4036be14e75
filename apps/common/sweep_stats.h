// Statistics of a sweep's results: per arm the maximum, mean, sample standard deviation (n - 1)
// and the 95% confidence interval of the mean over seeds (t-based: mean +- t_{0.975,n-1} sd/sqrt n,
// the form the APE paper reports), and the two-sided Welch t-test between two arms (unequal
// variances, Welch-Satterthwaite degrees of freedom; the test the posattn thesis reports, spec
// section 9). Student's t distribution comes from Boost.Math (boost::math::students_t).
//
// Deliberately does not: correct for multiple comparisons, test normality, or compute power.
#pragma once

#include <optional>
#include <vector>

namespace posgrad::apps {

struct ArmStats {
  int n = 0;
  double max = 0, mean = 0, sd = 0;  // sd: sample standard deviation (NaN when n < 2)
};
ArmStats arm_stats(const std::vector<double>& values);

// Half the width of the 95% confidence interval of the mean: t_{0.975,n-1} * sd / sqrt(n).
// NaN when n < 2 (no spread to estimate).
double ci95_half_width(const ArmStats& s);

struct WelchResult {
  double t = 0, df = 0, p = 1;  // p: two-sided
  double effect = 0;            // mean(b) - mean(a)
};
// nullopt when either arm has fewer than 2 values, or both have zero variance.
std::optional<WelchResult> welch_t_test(const std::vector<double>& a, const std::vector<double>& b);
// The same from summary statistics (for checking against published tables).
std::optional<WelchResult> welch_t_test(const ArmStats& a, const ArmStats& b);

// P(|T| >= |t|) for Student's t with df > 0 degrees of freedom.
double student_t_two_sided_p(double t, double df);
// The quantile t_{q,df}: P(T <= t) = q, for q in (0, 1) and df > 0.
double student_t_quantile(double q, double df);

}  // namespace posgrad::apps
