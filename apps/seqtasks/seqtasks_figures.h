// The figures of a seqtasks run (seqtasks figures RUN [--checkpoint best|latest] [--example K]):
// the transduction apps' figures (apps/transduction_common/transduction_figures.h) with APE's
// ("ape") per-head generator angles (one panel; RoPE's frequencies at initialisation unless the
// run changed APE's init). On REVERSE a trained model's cross-attention looks at the source
// token the step outputs, an anti-diagonal.
// Deliberately does not: draw anything itself (the shared figures job does).
#pragma once

#include "apps/seqtasks/seqtasks_settings.h"
#include "apps/transduction_common/transduction_figures.h"

namespace posgrad::seqtasks_app {

// Loads the run's settings into c (through settings) and draws its figures.
void draw_figures(SeqtasksSettings& c, apps::Settings& settings, transduction_app::FiguresRequest request);

}  // namespace posgrad::seqtasks_app
