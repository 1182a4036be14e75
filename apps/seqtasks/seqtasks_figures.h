// The figures of a seqtasks run (seqtasks figures RUN [--checkpoint best|latest] [--example K]),
// in RUN/figures/ (PNG with an SVG twin):
//   curves.png           the learning curves: training and dev loss per evaluated epoch, and the
//                        dev perplexity (log scale)
//   ape_angles.png       for APE ("ape"): each head's rotation angles, the checkpoint's (solid)
//                        against the initialisation's (dashed: a fresh model from the run's seed,
//                        RoPE's frequencies unless the run changed APE's init); the angles of the
//                        generator W = exp(A - A^T) per step of position (apps/common/rotation_angles.h)
//   cross_attention.png  the cross-attention probabilities of test example K (default 0) under
//                        teacher forcing, in evaluation mode: one panel per decoder layer and
//                        head, decoder steps (rows, labelled with the decoder's input token) by
//                        source tokens (columns); on REVERSE a trained model looks at the source
//                        token the step outputs, an anti-diagonal
// An example outside the test split is one error line, before anything is drawn.
// Deliberately does not: draw self-attention, compare runs (posgrad-sweep's tables do), or
// decode (seqtasks decode).
#pragma once

#include <cstdint>
#include <string>

#include "apps/seqtasks/seqtasks_settings.h"

namespace posgrad::seqtasks_app {

void draw_figures(SeqtasksSettings& c, apps::Settings& settings, const std::string& run_dir, const std::string& which,
                  int64_t example);

}  // namespace posgrad::seqtasks_app
