// The figures of a treetasks run (see treetasks_figures.h).
// Shapes: letters of shape_legend.h, plus kappa, the branching factor.
#include "apps/treetasks/treetasks_figures.h"

#include "apps/common/cli.h"
#include "apps/common/rotation_angles.h"
#include "attention/schemes/ape_tree.h"

namespace posgrad::treetasks_app {

using transduction_app::AnglePanel;

namespace {

// Per branch b, the angles of each head's W_b: [kappa] x [H|1] x [Dh / 2].
std::vector<std::vector<std::vector<double>>> branch_angles(const ApeTree& ape) {
  const Tensor w = ape.branch_matrices().value();  // [kappa, H|1, Dh, Dh]
  std::vector<std::vector<std::vector<double>>> out;
  for (int64_t b = 0; b < w.size(0); ++b) out.push_back(apps::rotation_angles_of(w.select(0, b).contiguous()));
  return out;
}

}  // namespace

void draw_figures(TreetasksSettings& c, apps::Settings& settings, transduction_app::FiguresRequest request) {
  apps::load_run_settings(settings, request.run_dir);
  const TransductionSplits data = make_splits(c);
  request.title = fmt::format("treetasks, {} ({}-first) with {}, seed {}", c.task, c.order, c.model.positional, c.seed);
  const auto angles = [](AttentionHook& learned, AttentionHook& initial) {
    const auto* now = dynamic_cast<const ApeTree*>(&learned);
    const auto* then = dynamic_cast<const ApeTree*>(&initial);
    std::vector<AnglePanel> panels;
    if (!now || !then) return panels;
    const auto learned_angles = branch_angles(*now), initial_angles = branch_angles(*then);
    for (size_t b = 0; b < learned_angles.size(); ++b)
      panels.push_back({fmt::format("branch {}: learned (solid) vs init (dashed)", b), learned_angles[b], initial_angles[b]});
    return panels;
  };
  transduction_app::draw_transduction_figures(request, model_config(c), static_cast<uint64_t>(c.seed), data.test, angles);
}

}  // namespace posgrad::treetasks_app
