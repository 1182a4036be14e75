// Siren (see siren.h).
#include "nn/siren.h"

#include <fmt/format.h>

#include <cmath>

#include "nn/activations.h"
#include "nn/init.h"

namespace posgrad {

Siren::Siren(const SirenOptions& options, Generator& gen) : options_(options) {
  if (options.in_features < 1 || options.out_features < 1 || options.hidden < 1)
    fail("Siren: sizes must be >= 1, got in={} hidden={} out={}", options.in_features, options.hidden,
         options.out_features);
  if (options.layers < 1) fail("Siren: needs at least one layer, got layers={}", options.layers);
  if (!std::isfinite(options.omega) || options.omega <= 0.0)
    fail("Siren: omega must be a positive number, got {}", options.omega);
  if (!std::isfinite(options.omega_initial)) fail("Siren: omega_initial must be finite, got {}", options.omega_initial);
  for (int64_t i = 0; i < options.layers; ++i) {
    const int64_t in = i == 0 ? options.in_features : options.hidden;
    const bool last = i + 1 == options.layers;
    const int64_t out = last ? options.out_features : options.hidden;
    auto layer = std::make_shared<Linear>(in, out, true, gen);
    const double n_in = static_cast<double>(in);
    double bound;
    if (last)
      bound = std::sqrt(3.0 / n_in);
    else if (i == 0)
      bound = 1.0 / n_in;
    else
      bound = std::sqrt(6.0 / n_in) / options.omega;
    init::uniform_(layer->weight().value(), -bound, bound, gen);
    init::zeros_(layer->bias().value());
    layers_.push_back(register_module(fmt::format("layers.{}", i), layer));
  }
}

Variable Siren::forward(const Variable& x) {
  if (x.dim() < 1 || x.size(-1) != options_.in_features)
    fail("Siren: input must be [..., {}], got {}", options_.in_features, x.value().describe());
  Variable h = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    h = layers_[i]->forward(h);
    if (i + 1 < layers_.size()) h = sine(h, i == 0 ? first_omega() : options_.omega);
  }
  return h;
}

std::string Siren::extra_repr() const {
  return fmt::format("in={}, hidden={}, out={}, layers={}, omega={}, omega_initial={}", options_.in_features,
                     options_.hidden, options_.out_features, options_.layers, options_.omega, first_omega());
}

}  // namespace posgrad
