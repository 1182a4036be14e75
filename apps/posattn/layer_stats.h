// What each layer of a PosattnClassifier has learned about where to look, and what it costs:
// the Gaussian span's sigma per positional dim, its box (half-width and span size per dim), and
// the share of the N^2 score entries the attention path of its last forward computed
// (MultiHeadAttention::last_computed_share: the box's pairs on the fused path, 1 on the reference)
// and the share the box keeps (query-key pairs inside the box and the grid).
//
// Deliberately does not: time anything or change the model.
// Shapes: letters of shape_legend.h.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "attention/posattn_classifier.h"

namespace posgrad::posattn_app {

struct LayerStats {
  std::vector<double> sigma;         // empty without a span
  std::vector<int64_t> half_width;   // per positional dim (S - 1 without a box)
  std::vector<int64_t> span_size;
  bool fused = false;                // the layer's last forward ran on the fused path
  double computed_share = 1.0;       // entries the last forward computed / N^2
  double box_share = 1.0;            // pairs inside the box and the grid / N^2
};

std::vector<LayerStats> layer_stats(const PosattnClassifier& model, const Positions& positions);
nlohmann::json to_json(const std::vector<LayerStats>& layers);
// Mean over layers of computed_share (the whole model's share: every layer has the same N^2).
double mean_computed_share(const std::vector<LayerStats>& layers);

}  // namespace posgrad::posattn_app
