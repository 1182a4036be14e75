// Adagrad: PyTorch 1.13's exact rule (torch.optim.Adagrad, dense single-tensor path), per
// parameter p with gradient g at its own step count t = 1, 2, ...:
//
//   g <- g + weight_decay * p                   (when weight_decay != 0)
//   clr = lr / (1 + (t - 1) * lr_decay)
//   G <- G + g * g                              (G starts at initial_accumulator_value)
//   p <- p - clr * g / (sqrt(G) + eps)
//
// Option `clip_per_tensor` (0 = off, PyTorch has no such option) reproduces the adaptive-span
// code's AdagradWithGradClip: when ||g||_2 of a parameter tensor exceeds it, that tensor's step
// size becomes clr * clip_per_tensor / (||g|| + 1e-10). Only the step is scaled: the
// accumulator G still adds the unclipped g * g.
//
// Written with tensor ops. State: "adagrad.sum.i" (G) and "adagrad.step.i" (int64 scalar).
// Deliberately not here: sparse gradients, `maximize`.
#pragma once

#include <vector>

#include "nn/optimizer.h"

namespace posgrad {

struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0.0;
  double weight_decay = 0.0;
  double initial_accumulator_value = 0.0;
  double eps = 1e-10;
  double clip_per_tensor = 0.0;  // > 0: adaptive-span per-tensor step clipping (see above)
};

class Adagrad : public Optimizer {
 public:
  explicit Adagrad(std::vector<Variable> params, const AdagradOptions& options = {});
  const char* kind() const override { return "adagrad"; }
  const AdagradOptions& options() const { return options_; }  // options_.lr is the initial lr
  int64_t step_count(size_t i) const { return steps_.at(i); }

 protected:
  void update() override;
  void export_state(OptimizerState& out) const override;
  void import_state(const OptimizerState& in) override;

 private:
  void validate() const;
  AdagradOptions options_;
  std::vector<Tensor> sums_;     // G, undefined until the parameter's first update
  std::vector<int64_t> steps_;
};

}  // namespace posgrad
