// The figures of a treetasks run (treetasks figures RUN [--checkpoint best|latest] [--example K]):
// the transduction apps' figures (apps/transduction_common/transduction_figures.h) with, for the
// tree APE ("ape_tree"), the rotation angles of each branch's matrices W_b = exp(A_b - A_b^T),
// one panel per branch b (a step to child b), each head's angles learned (solid) against the
// initialisation's (dashed). The cross-attention's rows and columns are the flattened trees'
// tokens (the decoder's in the run's output order).
// Deliberately does not: draw anything itself (the shared figures job does), or draw trees.
#pragma once

#include "apps/transduction_common/transduction_figures.h"
#include "apps/treetasks/treetasks_settings.h"

namespace posgrad::treetasks_app {

// Loads the run's settings into c (through settings) and draws its figures.
void draw_figures(TreetasksSettings& c, apps::Settings& settings, transduction_app::FiguresRequest request);

}  // namespace posgrad::treetasks_app
