// Finite guard: stops a training run at the first NaN or Inf, saying where it appeared. A loss
// that is not finite names the step; a gradient or parameter that is not finite names the
// parameter (its state_dict name, e.g. "blocks.2.attention.hooks.0.sigma") and the step. The
// run stops by throwing posgrad::Error before the optimizer applies anything, so the last
// checkpoint on disk is the last good state; the message names it.
//
//   check_finite_loss(loss_value, step, checkpoints.latest_path());
//   loss.backward();
//   check_finite_gradients(model, step, checkpoints.latest_path());
//   optimizer.step();
//
// Deliberately does not: skip bad steps and carry on (a run that meets a NaN has a bug or a bad
// setting; hiding it costs more than stopping), or scale losses.
#pragma once

#include <cstdint>
#include <filesystem>

#include "nn/module.h"

namespace posgrad::apps {

void check_finite_loss(double loss, int64_t step, const std::filesystem::path& last_good_checkpoint);
// Scans every gradient and every parameter value (one pass; one read-back per GPU).
void check_finite_gradients(const Module& model, int64_t step, const std::filesystem::path& last_good_checkpoint);

}  // namespace posgrad::apps
