// Adagrad: see adagrad.h for the rule.
#include "nn/adagrad.h"

#include "tensor/ops.h"

#include <cmath>

namespace posgrad {

namespace {

// ||t||_2 accumulated in double.
double l2_norm(const Tensor& t) {
  const Tensor c = t.to(kCPU).contiguous();
  return dispatch_float(c.dtype(), "adagrad", [&]<typename T>() {
    const T* p = c.data<T>();
    double s = 0;
    for (int64_t i = 0; i < c.numel(); ++i) s += static_cast<double>(p[i]) * static_cast<double>(p[i]);
    return std::sqrt(s);
  });
}

}  // namespace

Adagrad::Adagrad(std::vector<Variable> params, const AdagradOptions& o)
    : Optimizer(std::move(params), o.lr), options_(o), sums_(params_.size()), steps_(params_.size(), 0) {
  validate();
}

void Adagrad::validate() const {
  if (!(options_.lr_decay >= 0)) fail("adagrad: invalid lr_decay {}", options_.lr_decay);
  if (!(options_.weight_decay >= 0)) fail("adagrad: invalid weight_decay {}", options_.weight_decay);
  if (!(options_.initial_accumulator_value >= 0))
    fail("adagrad: invalid initial_accumulator_value {}", options_.initial_accumulator_value);
  if (!(options_.eps >= 0)) fail("adagrad: invalid eps {}", options_.eps);
  if (!(options_.clip_per_tensor >= 0)) fail("adagrad: invalid clip_per_tensor {}", options_.clip_per_tensor);
}

void Adagrad::update() {
  for (size_t i = 0; i < params_.size(); ++i) {
    Variable& var = params_[i];
    if (!var.grad().defined()) continue;
    Tensor& p = var.mutable_value();
    Tensor& sum = sums_[i];
    if (!sum.defined()) sum = Tensor::full(p.shape(), options_.initial_accumulator_value, p.dtype(), p.device());
    const int64_t step = ++steps_[i];
    Tensor g = var.grad();
    if (options_.weight_decay != 0) g = g + p * options_.weight_decay;
    double clr = lr_ / (1.0 + static_cast<double>(step - 1) * options_.lr_decay);
    if (options_.clip_per_tensor > 0) {
      const double norm = l2_norm(g);
      if (norm > options_.clip_per_tensor) clr *= options_.clip_per_tensor / (norm + 1e-10);
    }
    sum = sum + g * g;
    const Tensor std_dev = sqrt(sum) + options_.eps;
    p.copy_(p + (g * -clr) / std_dev);
  }
}

void Adagrad::export_state(OptimizerState& out) const {
  out.hyper["lr_decay"] = options_.lr_decay;
  out.hyper["weight_decay"] = options_.weight_decay;
  out.hyper["initial_accumulator_value"] = options_.initial_accumulator_value;
  out.hyper["eps"] = options_.eps;
  out.hyper["clip_per_tensor"] = options_.clip_per_tensor;
  for (size_t i = 0; i < sums_.size(); ++i) {
    if (steps_[i] == 0) continue;
    out.tensors.emplace_back(key("step", i), Tensor::scalar(static_cast<double>(steps_[i]), kInt64));
    out.tensors.emplace_back(key("sum", i), sums_[i].clone());
  }
}

void Adagrad::import_state(const OptimizerState& in) {
  options_.lr_decay = hyper(in, "lr_decay");
  options_.weight_decay = hyper(in, "weight_decay");
  options_.initial_accumulator_value = hyper(in, "initial_accumulator_value");
  options_.eps = hyper(in, "eps");
  options_.clip_per_tensor = hyper(in, "clip_per_tensor");
  validate();
  std::vector<Tensor> sums(params_.size());
  std::vector<int64_t> steps(params_.size(), 0);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor step = find_buffer(in, key("step", i), i, /*scalar=*/true);
    if (!step.defined()) continue;
    steps[i] = static_cast<int64_t>(step.item());
    if (steps[i] < 1) fail("optimizer state (adagrad): '{}' must be >= 1, got {}", key("step", i), steps[i]);
    sums[i] = find_buffer(in, key("sum", i), i);
    if (!sums[i].defined()) fail("optimizer state (adagrad): '{}' is missing", key("sum", i));
  }
  sums_ = std::move(sums);
  steps_ = std::move(steps);
}

}  // namespace posgrad
