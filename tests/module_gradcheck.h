// check_module_gradients: gradcheck of a whole module in float64 (every parameter and the
// input), shared by the nn and attention test suites. Parameters are perturbed in place, so it
// needs contiguous float64 parameters (the helper converts the module with to(kFloat64)).
#pragma once

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <functional>

#include "posgrad.h"

namespace posgrad::test {

// Gradcheck of a whole module in float64: the gradients backward() gives every parameter (and
// the input, when it is floating) against central differences of sum(f(x) * R), R fixed.
// Perturbs the tensors in place through their storage (parameters are contiguous).
inline void check_module_gradients(Module& m, const Tensor& input, const std::function<Variable(const Variable&)>& f,
                            double eps = 1e-6, double atol = 1e-6, double rtol = 1e-4) {
  m.to(kFloat64);
  const bool input_grad = is_floating(input.dtype());
  const Tensor x = input_grad ? input.to(kFloat64).contiguous() : input;
  const Variable xv(x, input_grad);
  Generator gen(99);
  const Variable out = f(xv);
  const Variable weights(uniform(out.shape(), 0.5, 1.5, gen, kFloat64));
  auto scalar = [&] { return sum(f(Variable(x)) * weights).item(); };
  m.zero_grad();
  sum(out * weights).backward();

  std::vector<std::pair<std::string, Variable>> targets = m.named_parameters();
  if (input_grad) targets.emplace_back("input", xv);
  for (const auto& [name, v] : targets) {
    BOOST_REQUIRE(v.value().is_contiguous());
    const std::vector<double> analytic = v.grad().defined() ? v.grad().to_vector<double>()
                                                            : std::vector<double>(static_cast<size_t>(v.numel()), 0.0);
    double* data = v.value().data<double>();
    double worst = 0.0;
    for (int64_t k = 0; k < v.numel(); ++k) {
      const double orig = data[k];
      double lp, lm;
      {
        NoGradGuard no_grad;
        data[k] = orig + eps;
        lp = scalar();
        data[k] = orig - eps;
        lm = scalar();
      }
      data[k] = orig;
      const double numeric = (lp - lm) / (2 * eps), err = std::abs(numeric - analytic[static_cast<size_t>(k)]);
      worst = std::max(worst, err);
      BOOST_TEST(err <= atol + rtol * std::abs(numeric),
                 m.type_name() << " " << name << "[" << k << "]: analytic " << analytic[static_cast<size_t>(k)]
                               << " vs numeric " << numeric);
    }
    BOOST_TEST_MESSAGE(m.type_name() << " " << name << ": worst |analytic - numeric| = " << worst);
  }
}

}  // namespace posgrad::test
