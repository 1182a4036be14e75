// The figures job of a transduction app (seqtasks figures RUN, treetasks figures RUN
// [--checkpoint best|latest] [--example K]), in RUN/figures/ (PNG with an SVG twin):
//   curves.png           the learning curves: training and dev loss per evaluated epoch, and the
//                        dev perplexity (log scale)
//   ape_angles.png       for an APE scheme (the app says which: ApeSequence in seqtasks, ApeTree's
//                        branch matrices in treetasks): each head's rotation angles, the
//                        checkpoint's (solid) against the initialisation's (dashed: a fresh model
//                        from the run's seed), one panel per generator set (a tree's branch);
//                        the angles of W = exp(A - A^T) per step (apps/common/rotation_angles.h)
//   cross_attention.png  the cross-attention probabilities of test example K (default 0) under
//                        teacher forcing, in evaluation mode: one panel per decoder layer and
//                        head, decoder steps (rows, labelled with the decoder's input token) by
//                        source tokens (columns)
// An example outside the test split is one error line, before anything is drawn.
// Deliberately does not: read the app's settings (the app gives the model, the test split and
// the angles), draw self-attention, compare runs (posgrad-sweep's tables do), or decode.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attention/transduction/encoder_decoder.h"
#include "datasets/transduction/transduction_batch.h"

namespace posgrad::transduction_app {

// One panel of ape_angles.png: per head, the angles of the trained and of the initial generator.
struct AnglePanel {
  std::string title;
  std::vector<std::vector<double>> learned, initial;  // [H or 1] x [Dh / 2]
};

// The angle panels of a trained and an initial positional scheme; none for a scheme without angles.
using AnglesOf = std::function<std::vector<AnglePanel>(AttentionHook& learned, AttentionHook& initial)>;

struct FiguresRequest {
  std::string run_dir, which = "best";  // the run folder and its checkpoint
  int64_t example = 0;                  // the test example of cross_attention.png
  std::string title;                    // "seqtasks, reverse with ape, seed 3"
};

// Draws the figures of the run (its settings already loaded into `config`), `seed` its seed.
void draw_transduction_figures(const FiguresRequest& request, const EncoderDecoderConfig& config, uint64_t seed,
                               const std::vector<TransductionExample>& test, const AnglesOf& angles);

}  // namespace posgrad::transduction_app
