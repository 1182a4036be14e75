// Shared APE pieces (see ape_common.h).
// Shapes: letters of shape_legend.h.
#include "attention/schemes/ape_common.h"

#include <fmt/format.h>

#include <cmath>

namespace posgrad {

std::string ApeSettings::describe() const {
  return fmt::format("init={}, decay={}{}", generator_init_name(init), decays() ? fmt::format("{}", decay) : "off",
                     trainable ? "" : ", frozen");
}

ApeSettings read_ape_settings(const HookOptions& options) {
  ApeSettings s;
  s.init = parse_generator_init(options.choice("init", "rope_like", {"rope_like", "near_identity", "normal"}));
  s.trainable = options.flag("trainable", true);
  s.decay = options.number("decay", 0.98);
  if (!(s.decay >= 0.0 && s.decay <= 1.0))
    fail("option 'decay' must be in [0, 1] (1 or 0 disables the decay), got {}", s.decay);
  return s;
}

std::shared_ptr<OrthogonalGenerators> add_ape_generators(Module& owner, const std::string& name, int64_t count,
                                                         int64_t dim, const ApeSettings& settings, Generator& gen) {
  auto generators = owner.register_module(name, std::make_shared<OrthogonalGenerators>(count, dim, settings.init, gen));
  if (!settings.trainable) {
    Variable a = generators->generators();  // shares the parameter's state
    a.set_requires_grad(false);
  }
  return generators;
}

Variable apply_token_maps(const Variable& x, const Variable& maps) {
  if (x.dim() != 4) fail("APE: queries/keys must be [B, H, N, Dh], got {}", x.value().describe());
  const int64_t N = x.size(2), Dh = x.size(3);
  if (maps.dim() == 4) {
    // [H|1, N, Dh, Dh] shared by the batch: one matmul per (head, token) with the B rows as columns.
    if (maps.size(1) != N || maps.size(2) != Dh || maps.size(3) != Dh)
      fail("APE: token maps {} do not fit queries/keys {}", maps.value().describe(), x.value().describe());
    Variable columns = permute(x, {1, 2, 3, 0});                         // [H, N, Dh, B]
    return contiguous(permute(matmul(maps, columns), {3, 0, 1, 2}));      // [B, H, N, Dh]
  }
  if (maps.dim() != 5 || maps.size(0) != x.size(0) || maps.size(2) != N || maps.size(3) != Dh || maps.size(4) != Dh)
    fail("APE: token maps {} do not fit queries/keys {}", maps.value().describe(), x.value().describe());
  return squeeze(matmul(maps, unsqueeze(x, -1)), -1);  // [B, H, N, Dh, 1] -> [B, H, N, Dh]
}

Tensor decay_factors(const std::vector<int64_t>& distances, const Shape& shape, double decay, DType dtype,
                     Device device) {
  std::vector<double> f(distances.size());
  for (size_t i = 0; i < distances.size(); ++i) f[i] = std::pow(decay, static_cast<double>(distances[i]));
  return Tensor::from_vector(f, shape).to(dtype).to(device);
}

void check_ape_qk(const std::string& hook, const Variable& q, const Variable& k, int64_t heads, int64_t head_width) {
  for (const Variable* x : {&q, &k})
    if (x->dim() != 4 || x->size(1) != heads || x->size(3) != head_width)
      fail("{}: queries and keys must be [B, H, N, Dh] with H = {}, Dh = {}, got {}", hook, heads, head_width,
           x->value().describe());
}

}  // namespace posgrad
