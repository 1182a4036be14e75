// The figures of a cct run (cct figures RUN), in RUN/figures/ (PNG with an SVG twin):
//   curves.png      validation and test accuracy and the training loss per epoch
//   ape_angles.png  what an APE scheme learned: the rotation angles of each head's orthogonal
//                   generator W = exp(A - A^T), one panel per axis (rows and columns for
//                   ape_grid; the flat index for ape), the checkpoint's (solid) against the
//                   initialisation's (dashed, a fresh model from the run's seed)
// The angles: apps/common/rotation_angles.h.
// Deliberately does not: draw attention maps (the probabilities are MultiHeadAttention's).
#pragma once

#include <string>
#include <vector>

#include "apps/cct/cct_settings.h"
#include "apps/common/settings.h"

namespace posgrad::cct_app {

void draw_figures(CctSettings& c, apps::Settings& settings, const std::string& run_dir, const std::string& which);

}  // namespace posgrad::cct_app
