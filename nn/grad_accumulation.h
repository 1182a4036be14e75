// Gradient accumulation: k micro-batches per optimizer update. No machinery is needed for the
// gradients themselves: backward() adds into each parameter's existing gradient (the engine
// accumulates with +=), so calling backward k times and stepping once uses the SUM of the k
// micro-batch gradients. GradAccumulator only keeps the count and says
//   - when to step (after every k-th micro-batch), and
//   - what to multiply each micro-batch loss by: 1/k when `divide_loss` (the step then sees the
//     mean over micro-batches, like one batch k times larger), or 1 when not (the posattn
//     protocol: batch 20, k = 2, loss NOT divided, so the step sees the sum of two batch means).
//
//     GradAccumulator acc(2, /*divide_loss=*/false);
//     for (batch : loader) {
//       Variable loss = criterion(model(batch)) * acc.loss_scale();
//       loss.backward();
//       if (acc.micro_step()) { opt.step(); opt.zero_grad(); }
//     }
//     // At the end of an epoch acc.pending() says whether a partial window is left; posattn
//     // epochs divide evenly, so the loop above never leaves one there.
//
// Deliberately not here: loss scaling for mixed precision, distributed reduction.
#pragma once

#include <cstdint>

#include "tensor/error.h"

namespace posgrad {

class GradAccumulator {
 public:
  explicit GradAccumulator(int64_t steps, bool divide_loss = true) : steps_(steps), divide_loss_(divide_loss) {
    if (steps < 1) fail("GradAccumulator: steps must be >= 1, got {}", steps);
  }
  int64_t steps() const { return steps_; }
  bool divide_loss() const { return divide_loss_; }
  // The factor for each micro-batch loss: 1/steps when dividing, else 1.
  double loss_scale() const { return divide_loss_ ? 1.0 / static_cast<double>(steps_) : 1.0; }
  // Call once after each micro-batch's backward(). True when the optimizer should step now.
  bool micro_step() {
    if (++count_ < steps_) return false;
    count_ = 0;
    return true;
  }
  // Micro-batches accumulated since the last step (0 right after a step).
  int64_t pending() const { return count_; }
  // Forget a partial window (e.g. after zero_grad() at an epoch boundary).
  void reset() { count_ = 0; }
  // For checkpoints: resume inside a window.
  void set_pending(int64_t count) {
    if (count < 0 || count >= steps_) fail("GradAccumulator: pending count {} outside [0, {})", count, steps_);
    count_ = count;
  }

 private:
  int64_t steps_;
  bool divide_loss_;
  int64_t count_ = 0;
};

}  // namespace posgrad
