// The "ape_grid" scheme (see ape_grid.h).
// Shapes: letters of shape_legend.h; d = Dh / n and S_max as in ape_grid.h.
#include "attention/schemes/ape_grid.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace posgrad {

int64_t integer_sqrt(int64_t s) {
  if (s < 0) fail("integer_sqrt: negative argument {}", s);
  int64_t r = static_cast<int64_t>(std::sqrt(static_cast<double>(s)));
  while (r > 0 && r * r > s) --r;
  while ((r + 1) * (r + 1) <= s) ++r;
  return r;
}

ApeGrid::ApeGrid(int64_t heads, int64_t head_width, int64_t axes, const ApeSettings& settings, Generator& gen)
    : heads_(heads), head_width_(head_width), axes_(axes), settings_(settings) {
  if (axes < 1) fail("ape_grid: the number of axes must be >= 1, got {}", axes);
  if (head_width % axes != 0)
    fail("ape_grid: the head width Dh = {} must be divisible by the number of axes {} (each axis acts on Dh / {} "
         "features)", head_width, axes, axes);
  part_ = head_width / axes;
  generators_ = add_ape_generators(*this, "orthogonal", axes * heads, part_, settings, gen);
}

std::vector<Variable> ApeGrid::axis_maps(const Positions& side) const {
  if (side.is_tree()) fail("ape_grid: needs grid positions, got {} (use ape_tree for trees)", side.describe());
  if (side.dims() != axes_)
    fail("ape_grid: built for {} axes, but the positions are a {} ({}-D)", axes_, side.describe(), side.dims());
  const auto& S = side.structure();
  const int64_t N = side.tokens(), n = axes_, largest = *std::max_element(S.begin(), S.end()) + side.first();
  // [S_max, n*H, d, d] -> [S_max, n, H, d, d]: one doubling table for every (axis, head).
  const Variable table = reshape(generators_->powers(largest - 1), {largest, n, heads_, part_, part_});
  const std::vector<int64_t> coords = side.coordinates().to_vector<int64_t>();  // [N, n]
  std::vector<Variable> maps;
  for (int64_t a = 0; a < n; ++a) {
    std::vector<int64_t> c(static_cast<size_t>(N));
    for (int64_t t = 0; t < N; ++t) c[static_cast<size_t>(t)] = coords[static_cast<size_t>(t * n + a)];
    const Tensor index = Tensor::from_vector(c, {N}).to(table.device());
    maps.push_back(permute(index_select(select(table, 1, a), 0, index), {1, 0, 2, 3}));  // [H, N, d, d]
  }
  return maps;
}

void ApeGrid::rotate(Variable& q, Variable& k, const PositionPair& positions) {
  check_ape_qk("ape_grid", q, k, heads_, head_width_);
  const std::vector<Variable> query_maps = axis_maps(positions.queries());  // self-attention: once for both
  const std::vector<Variable> key_maps = positions.is_self() ? query_maps : axis_maps(positions.keys());
  auto apply = [&](const Variable& x, const std::vector<Variable>& maps) {
    if (axes_ == 1) return apply_token_maps(x, maps[0]);
    std::vector<Variable> parts;
    for (int64_t a = 0; a < axes_; ++a) parts.push_back(apply_token_maps(narrow(x, 3, a * part_, part_), maps[static_cast<size_t>(a)]));
    return cat(parts, 3);
  };
  q = apply(q, query_maps);
  k = apply(k, key_maps);
}

Tensor ApeGrid::decay_table(const PositionPair& positions, DType dtype) const {
  const int64_t n = positions.dims(), R = positions.relative_size();
  const std::vector<int64_t> offsets = positions.relative_offsets().to_vector<int64_t>();
  std::vector<int64_t> distance(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) {
    int64_t squared = 0;
    for (int64_t d = 0; d < n; ++d) squared += offsets[static_cast<size_t>(r * n + d)] * offsets[static_cast<size_t>(r * n + d)];
    distance[static_cast<size_t>(r)] = integer_sqrt(squared);
  }
  return decay_factors(distance, {R}, settings_.decay, dtype, kCPU);
}

AttentionTerms ApeGrid::attention_terms(const PositionPair& positions, DType dtype) {
  AttentionTerms terms;
  if (settings_.decays()) terms.modulation = Variable(decay_table(positions, dtype));
  return terms;
}

std::string ApeGrid::summary() const {
  return fmt::format("ape_grid (axes={}, H={}, Dh={} = {} x {}, {})", axes_, heads_, head_width_, axes_, part_,
                     settings_.describe());
}

std::shared_ptr<AttentionHook> make_ape_grid(const HookContext& context, const HookOptions& options, Generator& gen) {
  const int64_t default_axes = context.structure.empty() ? 2 : static_cast<int64_t>(context.structure.size());
  const int64_t axes = options.integer("axes", default_axes);
  const ApeSettings settings = read_ape_settings(options);
  return std::make_shared<ApeGrid>(context.heads, context.head_width(), axes, settings, gen);
}

}  // namespace posgrad
