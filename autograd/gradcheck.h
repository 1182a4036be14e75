// gradcheck: compares the gradients that backward() computes with central differences, in
// float64. The output is reduced to a scalar with fixed random weights, so every output element
// contributes. Inputs may be non-contiguous views (perturbations go through their strides), but
// not broadcast views with stride 0 (perturbing one element would move several).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autograd/variable.h"

namespace posgrad {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-6;
  double rtol = 1e-4;
  uint64_t seed = 1234;
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0.0;
  std::string message;  // names the first failing input and element
};

using GradcheckFn = std::function<Variable(const std::vector<Variable>&)>;

// `inputs` must be float64; every input gets requires_grad (pass constants through the closure).
GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace posgrad
