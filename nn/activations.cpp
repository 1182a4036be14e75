// Activation modules (see activations.h).
#include "nn/activations.h"

#include <cmath>

#include "autograd/functions.h"

namespace posgrad {

Variable sine(const Variable& x, double omega_0) { return sin(mul_scalar(x, omega_0)); }

Variable ReLU::forward(const Variable& x) { return relu(x); }
Variable GELU::forward(const Variable& x) { return gelu(x); }
Variable Sigmoid::forward(const Variable& x) { return sigmoid(x); }
Variable Tanh::forward(const Variable& x) { return tanh(x); }

Sine::Sine(double omega_0) : omega_0_(omega_0) {
  if (!std::isfinite(omega_0)) fail("Sine: omega_0 must be finite, got {}", omega_0);
}
Variable Sine::forward(const Variable& x) { return sine(x, omega_0_); }
std::string Sine::extra_repr() const { return fmt::format("omega_0={}", omega_0_); }

std::shared_ptr<Module> make_activation(const std::string& name, double sine_omega_0) {
  if (name == "relu") return std::make_shared<ReLU>();
  if (name == "gelu") return std::make_shared<GELU>();
  if (name == "sigmoid") return std::make_shared<Sigmoid>();
  if (name == "tanh") return std::make_shared<Tanh>();
  if (name == "sine") return std::make_shared<Sine>(sine_omega_0);
  if (name == "identity") return std::make_shared<Identity>();
  fail("unknown activation '{}' (valid: relu, gelu, sigmoid, tanh, sine, identity)", name);
}

}  // namespace posgrad
