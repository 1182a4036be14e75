// Initialisation (see init.h).
#include "nn/init.h"

#include <cmath>

namespace posgrad::init {

Fans fan_in_and_fan_out(const Shape& shape) {
  if (shape.size() < 2)
    fail("init: fan in and fan out need a tensor with at least 2 axes, got shape {}", shape_str(shape));
  int64_t receptive = 1;
  for (size_t d = 2; d < shape.size(); ++d) receptive *= shape[d];
  return {shape[1] * receptive, shape[0] * receptive};
}

double calculate_gain(const std::string& nonlinearity, std::optional<double> param) {
  if (nonlinearity == "linear" || nonlinearity == "conv1d" || nonlinearity == "conv2d" ||
      nonlinearity == "conv3d" || nonlinearity == "sigmoid")
    return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1.0 + slope * slope));
  }
  if (nonlinearity == "selu") return 0.75;
  fail("init: unknown nonlinearity '{}' (valid: linear, conv1d, conv2d, conv3d, sigmoid, tanh, relu, "
       "leaky_relu, selu)", nonlinearity);
}

namespace {

void check_floating(const Tensor& t, const char* op) {
  if (!t.defined()) fail("init.{}: tensor is undefined", op);
  if (!is_floating(t.dtype())) fail("init.{}: expected a floating-point tensor, got {}", op, t.describe());
}

double kaiming_std(const Tensor& t, double a, FanMode mode, const std::string& nonlinearity) {
  const Fans f = fan_in_and_fan_out(t.shape());
  const int64_t fan = mode == FanMode::FanIn ? f.fan_in : f.fan_out;
  return calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
}

double xavier_std(const Tensor& t, double gain) {
  const Fans f = fan_in_and_fan_out(t.shape());
  return gain * std::sqrt(2.0 / static_cast<double>(f.fan_in + f.fan_out));
}

}  // namespace

Tensor uniform_(Tensor t, double lo, double hi, Generator& gen) {
  check_floating(t, "uniform_");
  if (!(lo <= hi)) fail("init.uniform_: lower bound {} exceeds upper bound {}", lo, hi);
  if (t.numel() > 0) t.copy_(uniform(t.shape(), lo, hi, gen, t.dtype(), t.device()));
  return t;
}

Tensor normal_(Tensor t, double mean, double stddev, Generator& gen) {
  check_floating(t, "normal_");
  if (!(stddev >= 0)) fail("init.normal_: standard deviation must be >= 0, got {}", stddev);
  if (t.numel() > 0) t.copy_(normal(t.shape(), mean, stddev, gen, t.dtype(), t.device()));
  return t;
}

Tensor constant_(Tensor t, double value) {
  check_floating(t, "constant_");
  t.fill_(value);
  return t;
}
Tensor zeros_(Tensor t) { return constant_(std::move(t), 0.0); }
Tensor ones_(Tensor t) { return constant_(std::move(t), 1.0); }

// Zero-element tensors are left alone (as PyTorch does), before any fan is computed.
Tensor xavier_uniform_(Tensor t, Generator& gen, double gain) {
  check_floating(t, "xavier_uniform_");
  if (t.numel() == 0) return t;
  const double bound = std::sqrt(3.0) * xavier_std(t, gain);
  return uniform_(std::move(t), -bound, bound, gen);
}

Tensor xavier_normal_(Tensor t, Generator& gen, double gain) {
  check_floating(t, "xavier_normal_");
  if (t.numel() == 0) return t;
  return normal_(t, 0.0, xavier_std(t, gain), gen);
}

Tensor kaiming_uniform_(Tensor t, Generator& gen, double a, FanMode mode, const std::string& nonlinearity) {
  check_floating(t, "kaiming_uniform_");
  if (t.numel() == 0) return t;
  const double bound = std::sqrt(3.0) * kaiming_std(t, a, mode, nonlinearity);
  return uniform_(std::move(t), -bound, bound, gen);
}

Tensor kaiming_normal_(Tensor t, Generator& gen, double a, FanMode mode, const std::string& nonlinearity) {
  check_floating(t, "kaiming_normal_");
  if (t.numel() == 0) return t;
  return normal_(t, 0.0, kaiming_std(t, a, mode, nonlinearity), gen);
}

}  // namespace posgrad::init
