// Adam and AdamW, with PyTorch 1.13's exact update rules (torch.optim.Adam / AdamW, the default
// single-tensor path), per parameter p with gradient g at its own step count t = 1, 2, ...:
//
//   AdamW only:  p <- p * (1 - lr * weight_decay)            (decoupled decay)
//   Adam only:   g <- g + weight_decay * p                   (L2 penalty in the gradient)
//   m <- beta1 * m + (1 - beta1) * g
//   v <- beta2 * v + (1 - beta2) * g * g
//   amsgrad:     vmax <- max(vmax, v), and vmax replaces v below
//   p <- p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
//
// On the CPU the update is one fused elementwise loop per parameter (adam_update_fused: reads
// p, g, m, v once, writes them once, no temporaries, OpenMP over chunks); on CUDA the same
// function runs one fused kernel (tensor/cuda/adam.cu); as its composite twin in tests, the same
// formula runs as tensor ops (adam_update_composite).
// Arithmetic is in the parameter's dtype (float32 or float64), scalar coefficients are computed
// in double and rounded once, like PyTorch.
//
// State per parameter (created at its first update): "adam.m.i", "adam.v.i", "adam.vmax.i"
// (amsgrad only) and "adam.step.i" (int64 scalar); AdamW uses the prefix "adamw.".
// Deliberately not here: `maximize`, `foreach`/`fused` variants, capturable CUDA graphs.
#pragma once

#include <vector>

#include "nn/optimizer.h"

namespace posgrad {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // Adam: L2 added to the gradient
  bool amsgrad = false;
};

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;  // AdamW: decoupled, p *= 1 - lr * weight_decay
  bool amsgrad = false;
};

// Everything one update of one tensor needs.
struct AdamStepConfig {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad;
  bool decoupled;  // true: AdamW
  int64_t step;    // this update's step count t (1 for the first)
};

// The fused update, in place. `param`, `m`, `v` (and `vmax` when amsgrad) are contiguous CPU
// (or CUDA) tensors of one floating dtype and the same shape; `grad` may be strided (it is made
// contiguous). Throws Error on shape/dtype/device mismatches.
void adam_update_fused(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, Tensor& vmax,
                       const AdamStepConfig& config);
// The composite twin: the same formula as tensor ops (any device), results copied into
// `param`, `m`, `v` (and `vmax`). Allocates temporaries; used by set_use_fused(false) and tests.
void adam_update_composite(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, Tensor& vmax,
                           const AdamStepConfig& config);

class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Variable> params, const AdamOptions& options = {});
  const char* kind() const override { return decoupled_ ? "adamw" : "adam"; }
  // The current hyperparameters (lr() is the live learning rate).
  double beta1() const { return beta1_; }
  double beta2() const { return beta2_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  bool amsgrad() const { return amsgrad_; }
  // The number of updates parameter `i` has received (0 before its first).
  int64_t step_count(size_t i) const { return slots_.at(i).step; }
  // Testing hook: false runs the composite twin on the CPU too.
  void set_use_fused(bool fused) { use_fused_ = fused; }

 protected:
  Adam(std::vector<Variable> params, const AdamOptions& options, bool decoupled);
  void update() override;
  void export_state(OptimizerState& out) const override;
  void import_state(const OptimizerState& in) override;

 private:
  void validate() const;
  struct Slot {
    Tensor m, v, vmax;  // undefined until the first update (vmax: amsgrad only)
    int64_t step = 0;
  };
  double beta1_, beta2_, eps_, weight_decay_;
  bool amsgrad_;
  bool decoupled_;
  bool use_fused_ = true;
  std::vector<Slot> slots_;
};

class AdamW : public Adam {
 public:
  explicit AdamW(std::vector<Variable> params, const AdamWOptions& options = {});
};

}  // namespace posgrad
