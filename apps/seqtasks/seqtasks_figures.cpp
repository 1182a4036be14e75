// The figures of a seqtasks run (see seqtasks_figures.h).
#include "apps/seqtasks/seqtasks_figures.h"

#include "apps/common/cli.h"
#include "apps/common/rotation_angles.h"
#include "attention/schemes/ape_sequence.h"

namespace posgrad::seqtasks_app {

using transduction_app::AnglePanel;

void draw_figures(SeqtasksSettings& c, apps::Settings& settings, transduction_app::FiguresRequest request) {
  apps::load_run_settings(settings, request.run_dir);
  const TransductionSplits data = make_splits(c);
  request.title = fmt::format("seqtasks, {} with {}, seed {}", c.task, c.model.positional, c.seed);
  const auto angles = [](AttentionHook& learned, AttentionHook& initial) {
    const auto* now = dynamic_cast<const ApeSequence*>(&learned);
    const auto* then = dynamic_cast<const ApeSequence*>(&initial);
    if (!now || !then) return std::vector<AnglePanel>{};
    return std::vector<AnglePanel>{{"learned (solid) vs init (dashed)",
                                    apps::rotation_angles_of(now->generators().matrices().value()),   // [H] x [Dh / 2]
                                    apps::rotation_angles_of(then->generators().matrices().value())}};
  };
  transduction_app::draw_transduction_figures(request, model_config(c), static_cast<uint64_t>(c.seed), data.test, angles);
}

}  // namespace posgrad::seqtasks_app
