// Statistics of a sweep's results: per arm the maximum, mean and sample standard deviation
// (n - 1) over seeds, and the two-sided Welch t-test between two arms (unequal variances,
// Welch-Satterthwaite degrees of freedom; the test the posattn thesis reports, spec section 9).
// The p-value uses Student's t distribution through the regularised incomplete beta function,
// evaluated by its continued fraction (modified Lentz).
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

struct WelchResult {
  double t = 0, df = 0, p = 1;  // p: two-sided
  double effect = 0;            // mean(b) - mean(a)
};
// nullopt when either arm has fewer than 2 values, or both have zero variance.
std::optional<WelchResult> welch_t_test(const std::vector<double>& a, const std::vector<double>& b);
// The same from summary statistics (for checking against published tables).
std::optional<WelchResult> welch_t_test(const ArmStats& a, const ArmStats& b);

// I_x(a, b), the regularised incomplete beta function, x in [0, 1], a, b > 0.
double regularized_incomplete_beta(double x, double a, double b);
// P(|T| >= |t|) for Student's t with df degrees of freedom.
double student_t_two_sided_p(double t, double df);

}  // namespace posgrad::apps
