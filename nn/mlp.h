// MLP: a stack of Linear layers, sizes {in, h1, ..., out} (x [..., in] -> [..., out]). Each hidden
// layer is Linear -> [LayerNorm] -> activation -> Dropout; the last is a plain Linear (unless
// activate_output). It is a Sequential, so the parameter names are those of the equivalent
// PyTorch nn.Sequential ("0.weight", "4.bias", ...). Dropout modules are always present (identity
// at p = 0), so the names do not depend on the dropout rate.
//
// Deliberately not here: SIREN initialisation (the SIREN layer), residual connections.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/sequential.h"
#include "tensor/random.h"

namespace posgrad {

struct MLPOptions {
  std::string activation = "relu";  // a make_activation() name
  double dropout = 0.0;             // after each hidden activation
  bool layer_norm = false;          // LayerNorm after each hidden Linear, before the activation
  bool bias = true;
  bool activate_output = false;     // also put the activation (no dropout) after the last Linear
  double sine_omega_0 = 30.0;       // for activation "sine"
  // The dropout masks' generator; null: a fresh one seeded from a draw of the init generator.
  std::shared_ptr<Generator> dropout_generator;
};

class MLP : public Sequential {
 public:
  MLP(const std::vector<int64_t>& sizes, Generator& gen, const MLPOptions& options = {});
  MLP(const std::vector<int64_t>& sizes, const std::string& activation, double dropout, Generator& gen);

  const std::vector<int64_t>& sizes() const { return sizes_; }

 private:
  std::vector<int64_t> sizes_;
};

}  // namespace posgrad
