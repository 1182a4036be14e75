// MLP (see mlp.h).
#include "nn/mlp.h"

#include "nn/activations.h"
#include "nn/dropout.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"

namespace posgrad {

namespace {
MLPOptions with(const std::string& activation, double dropout) {
  MLPOptions o;
  o.activation = activation;
  o.dropout = dropout;
  return o;
}
}  // namespace

MLP::MLP(const std::vector<int64_t>& sizes, Generator& gen, const MLPOptions& options) : sizes_(sizes) {
  if (sizes.size() < 2) fail("MLP: needs at least an input and an output size, got {} sizes", sizes.size());
  for (int64_t s : sizes)
    if (s <= 0) fail("MLP: every size must be > 0, got {}", fmt::join(sizes, ", "));
  make_activation(options.activation, options.sine_omega_0);  // validates the name up front
  std::shared_ptr<Generator> drop_gen = options.dropout_generator;
  if (!drop_gen) {
    const auto r = philox4x32_10(gen.reserve(4), 0, gen.seed());
    drop_gen = std::make_shared<Generator>((static_cast<uint64_t>(r[0]) << 32) | r[1]);
  }
  const size_t layers = sizes.size() - 1;
  for (size_t i = 0; i < layers; ++i) {
    add(std::make_shared<Linear>(sizes[i], sizes[i + 1], options.bias, gen));
    const bool last = i + 1 == layers;
    if (!last && options.layer_norm) add(std::make_shared<LayerNorm>(sizes[i + 1]));
    if (!last || options.activate_output) add(make_activation(options.activation, options.sine_omega_0));
    if (!last) add(std::make_shared<Dropout>(options.dropout, drop_gen));
  }
}

MLP::MLP(const std::vector<int64_t>& sizes, const std::string& activation, double dropout, Generator& gen)
    : MLP(sizes, gen, with(activation, dropout)) {}

}  // namespace posgrad
