// Per-layer span and cost statistics (see layer_stats.h).
// Shapes: letters of shape_legend.h.
#include "apps/posattn/layer_stats.h"

#include <algorithm>

#include "attention/spans/gaussian_span.h"

namespace posgrad::posattn_app {

std::vector<LayerStats> layer_stats(const PosattnClassifier& model, const Positions& positions) {
  std::vector<LayerStats> out;
  const auto& S = positions.structure();
  const double N = static_cast<double>(positions.tokens());
  for (const auto& block : model.blocks()) {
    LayerStats s;
    const MultiHeadAttention& attention = block->attention();
    std::optional<OffsetBox> box;
    for (const auto& hook : attention.hooks()) {
      if (auto span = std::dynamic_pointer_cast<GaussianSpan>(hook)) {
        s.sigma = span->sigma_values();
        s.half_width = span->half_widths(S);
        s.span_size = span->span_sizes(S);
      }
      if (auto range = hook->key_range(positions)) box = box ? box->intersect(*range) : *range;
    }
    if (s.half_width.empty())
      for (int64_t size : S) {
        s.half_width.push_back(size - 1);
        s.span_size.push_back(2 * size - 1);
      }
    s.fused = attention.last_forward_fused();
    s.computed_share = attention.last_computed_share(positions);
    s.box_share = box ? box->pairs(S) / (N * N) : 1.0;
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::json to_json(const std::vector<LayerStats>& layers) {
  nlohmann::json out = nlohmann::json::array();
  for (const LayerStats& s : layers) {
    nlohmann::json j{{"half_width", s.half_width}, {"span_size", s.span_size}, {"fused", s.fused},
                     {"computed_share", s.computed_share}, {"box_share", s.box_share}};
    if (!s.sigma.empty()) j["sigma"] = s.sigma;
    out.push_back(std::move(j));
  }
  return out;
}

double mean_computed_share(const std::vector<LayerStats>& layers) {
  if (layers.empty()) return 1.0;
  double sum = 0;
  for (const LayerStats& s : layers) sum += s.computed_share;
  return sum / static_cast<double>(layers.size());
}

}  // namespace posgrad::posattn_app
