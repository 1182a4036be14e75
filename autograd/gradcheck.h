// gradcheck: compares the gradients that backward() computes with central differences, in
// float64. The output is reduced to a scalar with fixed random weights, so every output element
// contributes. Inputs may be non-contiguous views (perturbations go through their strides), but
// not broadcast views with stride 0 (perturbing one element would move several).
//
// Devices: inputs are CPU float64 tensors; `options.device` says where `fn` runs. On a GPU each
// input's whole storage is sent there and viewed with the input's strides (a transposed input
// stays a transposed view), and the analytic gradients are the GPU's. Constants that `fn`
// closes over must follow its inputs' device (see tests/autograd/test_gradcheck.cpp).
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
  Device device = kCPU;  // where fn and backward() run
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0.0;
  std::string message;  // names the first failing input and element
};

using GradcheckFn = std::function<Variable(const std::vector<Variable>&)>;

// `inputs` must be CPU float64; every input gets requires_grad (pass constants through the closure).
GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace posgrad
