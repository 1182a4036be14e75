// The charlm figures (cairo, apps/common/plot.h):
//   span_mask.png        the learned soft mask of every head against distance 1..S (rows =
//                        layers, columns = heads): flat at 1 up to the span z, the ramp of R, 0
//                        beyond; each panel names z and the ramp end (the seed repo's figure done
//                        right: a distance axis, not key positions).
//   spans.png            each head's span z over training, one panel per layer.
//   learning_curves.png  training loss and validation loss (nats per character) against steps.
//   sample attention     (charlm sample --figure F) the attention of each head to the previous
//                        characters while the last characters of a sample were generated: rows =
//                        the character fed in (the query), columns = distance 1, 2, ...
//   text spans           (charlm spans --figure F) the dynamic span along a passage: the text in
//                        rows of 64 characters, each coloured by its z_t (mean over layers and
//                        heads), and z_t against the position, per layer and their mean.
// Deliberately not here: choosing what to draw (the jobs in charlm_run.cpp do).
// Shapes: letters of shape_legend.h (none are tensors here: plain vectors per layer and head).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "attention/lm/char_transformer.h"

namespace posgrad::charlm {

void draw_span_mask(const CharTransformer& model, const std::filesystem::path& path);
// history[k][layer][head] = z at steps[k].
void draw_span_history(const std::vector<double>& steps, const std::vector<std::vector<std::vector<double>>>& history,
                       const std::filesystem::path& path);
void draw_learning_curves(const std::vector<double>& train_steps, const std::vector<double>& train_loss,
                          const std::vector<double>& val_steps, const std::vector<double>& val_loss,
                          const std::filesystem::path& path);

// queries[t]: the character fed at generation step t (a label); probs[t][l]: layer l's attention
// of that step in distance space, [H, W_l] row-major (slot j = distance W_l - j, attend_self off);
// windows[l] = W_l. Distances beyond a layer's window are drawn as 0.
void draw_passage_attention(const std::vector<std::string>& queries,
                            const std::vector<std::vector<std::vector<float>>>& probs, int64_t heads,
                            const std::vector<int64_t>& windows, int64_t max_distance, const std::filesystem::path& path);

// text: the passage (bytes); z[l][t]: layer l's z_t at character t, averaged over the heads;
// mean_z[t]: z[.][t] averaged over the layers; ramp: R (named in the title: the mask reaches z_t + R).
void draw_text_spans(const std::string& text, const std::vector<std::vector<double>>& z,
                     const std::vector<double>& mean_z, double ramp, const std::filesystem::path& path);

}  // namespace posgrad::charlm
