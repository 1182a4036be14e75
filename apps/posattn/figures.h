// The figures of one posattn run (`posattn figures RUN`), into RUN/figures/ as PNG + SVG:
//   curves      train and validation loss, validation accuracy per epoch
//   spans       learned sigma and box half-width per layer over the epochs (runs with a span)
//   encoding    the positional bias each head's encoding gives a key, v_h . E_h[r] / sqrt(Dh),
//               over the relative grid (2-D: (2 S0 - 1) x (2 S1 - 1)), per layer and head
//               (runs with a relative scheme that has an encoding table: siren, txl_baseline)
//   attention   for a few validation images, the head-averaged attention of the query the
//               classifier reads (token N - 1 with pooling 'last', else the centre pixel) in
//               every layer, blended over the image, with the span box drawn on it (2-D)
// and then into the run's TensorBoard events as images "figures/<name>" at the last logged step.
//
// Deliberately does not: draw sweep-level figures (posgrad-sweep draws the learning curves of
// every arm) or retrain anything.
#pragma once

#include <cstdint>
#include <string>

#include "apps/common/settings.h"
#include "apps/posattn/posattn_settings.h"

namespace posgrad::posattn_app {

void draw_figures(PosattnSettings& c, apps::Settings& settings, const std::string& run_dir, const std::string& which,
                  int64_t images);

}  // namespace posgrad::posattn_app
