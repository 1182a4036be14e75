// Siren: an MLP with sine activations (Sitzmann et al., 2020), as posattn uses it to encode
// relative positions. `layers` Linear maps in -> hidden -> ... -> hidden -> out; after every
// Linear but the last comes sin(omega * z), where the first activation uses omega_initial
// (0 = same as omega). x [..., in] -> [..., out]. Parameters: layers.<i>.weight / layers.<i>.bias.
//
// Initialisation (the posattn SIREN initialiser, built with omega and c = 6; all biases 0):
//   first layer   W ~ U(-1/n_in, 1/n_in)
//   hidden layers W ~ U(-sqrt(6/n_in)/omega, +sqrt(6/n_in)/omega)
//   last layer    W ~ U(-sqrt(3/n_in), +sqrt(3/n_in))   (Kaiming-uniform with linear gain)
// A single-layer Siren (layers = 1) is one linear map with the last-layer init.
//
// Deliberately not here: other activations (nn/mlp.h), what the inputs mean (the positional
// scheme decides), per-transformer-layer omega overrides (the caller picks omega).
#pragma once

#include <memory>
#include <vector>

#include "nn/linear.h"
#include "nn/module.h"
#include "tensor/random.h"

namespace posgrad {

struct SirenOptions {
  int64_t in_features = 1;
  int64_t hidden = 64;
  int64_t out_features = 64;
  int64_t layers = 3;          // number of Linear layers (>= 1)
  double omega = 10.0;         // omega_0 of the hidden activations and of the initialiser
  double omega_initial = 0.0;  // omega of the first activation; <= 0 means omega
};

class Siren : public Module {
 public:
  Siren(const SirenOptions& options, Generator& gen);

  Variable forward(const Variable& x) override;  // [..., in] -> [..., out]

  const SirenOptions& options() const { return options_; }
  double first_omega() const { return options_.omega_initial > 0 ? options_.omega_initial : options_.omega; }
  const std::vector<std::shared_ptr<Linear>>& layers() const { return layers_; }
  std::string extra_repr() const override;

 private:
  SirenOptions options_;
  std::vector<std::shared_ptr<Linear>> layers_;
};

}  // namespace posgrad
