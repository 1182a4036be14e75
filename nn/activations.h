// Activation modules (elementwise, no parameters, any shape [...] -> [...]): ReLU, GELU (exact,
// erf form, like torch.nn.GELU()), Sigmoid, Tanh, Sine (sin(omega_0 x), the SIREN activation) and
// Identity, plus make_activation() to build one from a config name.
//
// Deliberately not here: the differentiable math itself (autograd/functions.h: relu, gelu, ...)
// and SIREN's special initialisation (it belongs to the SIREN layer, not to the activation).
#pragma once

#include <memory>
#include <string>

#include "nn/module.h"

namespace posgrad {

// sin(omega_0 * x), differentiable.
Variable sine(const Variable& x, double omega_0);

class ReLU : public Module {
 public:
  Variable forward(const Variable& x) override;
};

class GELU : public Module {
 public:
  Variable forward(const Variable& x) override;
};

class Sigmoid : public Module {
 public:
  Variable forward(const Variable& x) override;
};

class Tanh : public Module {
 public:
  Variable forward(const Variable& x) override;
};

class Sine : public Module {
 public:
  explicit Sine(double omega_0);
  Variable forward(const Variable& x) override;
  double omega_0() const { return omega_0_; }
  std::string extra_repr() const override;

 private:
  double omega_0_;
};

class Identity : public Module {
 public:
  Variable forward(const Variable& x) override { return x; }
};

// "relu", "gelu", "sigmoid", "tanh", "sine" (uses sine_omega_0), "identity"; anything else is an
// Error listing the valid names.
std::shared_ptr<Module> make_activation(const std::string& name, double sine_omega_0 = 30.0);

}  // namespace posgrad
