// The "siren" scheme (see siren_relative.h).
// Shapes: letters of shape_legend.h.
#include "attention/schemes/siren_relative.h"

#include <fmt/format.h>

namespace posgrad {

SirenRelative::SirenRelative(int64_t width, int64_t heads, int64_t dims, const SirenRelativeOptions& options,
                             Generator& gen)
    : RelativeEncodingScheme(width, heads), dims_(dims), options_(options) {
  if (dims < 1) fail("siren: needs at least one positional dim, got {}", dims);
  SirenOptions so;
  so.in_features = dims;
  so.hidden = options.hidden;
  so.out_features = width;
  so.layers = options.layers;
  so.omega = options.omega;
  so.omega_initial = options.omega_initial;
  siren_ = register_module("siren", std::make_shared<Siren>(so, gen));
  init_biases_xavier(gen);
}

Variable SirenRelative::encode(const PositionPair& positions, DType dtype) {
  if (positions.is_tree() || positions.dims() != dims_)
    fail("siren: built for {}-D positions, got {}", dims_, positions.describe());
  Tensor x = options_.normalized ? positions.normalised_relative_grid(dtype) : positions.relative_offsets().to(dtype);
  // The SIREN's parameters may live on another device than the CPU-made grid.
  return siren_->forward(Variable(x.to(u_.device())));  // [R, n] -> [R, D]
}

std::string SirenRelative::summary() const {
  return fmt::format("siren(dims={}, hidden={}, layers={}, omega={}, omega_initial={}, normalized={})", dims_,
                     options_.hidden, options_.layers, options_.omega, siren_->first_omega(), options_.normalized);
}

std::shared_ptr<AttentionHook> make_siren_relative(const HookContext& context, const HookOptions& options,
                                                   Generator& gen) {
  if (context.structure.empty())
    fail("siren needs the positional structure (the grid or sequence size) to know its input dims");
  SirenRelativeOptions o;
  o.hidden = options.integer("hidden", o.hidden);
  o.layers = options.integer("layers", o.layers);
  o.omega = options.number("omega", o.omega);
  o.omega_initial = options.number("omega_initial", o.omega_initial);
  o.normalized = options.flag("normalized", o.normalized);
  if (o.hidden < 1) fail("option 'hidden' must be >= 1, got {}", o.hidden);
  if (o.layers < 1) fail("option 'layers' must be >= 1, got {}", o.layers);
  if (!(o.omega > 0)) fail("option 'omega' must be > 0, got {}", o.omega);
  if (o.omega_initial < 0) fail("option 'omega_initial' must be >= 0 (0 = omega), got {}", o.omega_initial);
  return std::make_shared<SirenRelative>(context.width, context.heads, static_cast<int64_t>(context.structure.size()),
                                         o, gen);
}

}  // namespace posgrad
