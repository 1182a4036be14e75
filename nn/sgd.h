// SGD with momentum, dampening, weight decay and Nesterov momentum: PyTorch 1.13's exact rule
// (torch.optim.SGD, single-tensor path), per parameter p with gradient g:
//
//   g <- g + weight_decay * p                          (when weight_decay != 0)
//   momentum != 0:  buf <- g                           (first update of p)
//                   buf <- momentum * buf + (1 - dampening) * g   (later updates)
//                   g <- nesterov ? g + momentum * buf : buf
//   p <- p - lr * g
//
// Written with tensor ops (a few temporaries per parameter; SGD is never the bottleneck).
// State: "sgd.momentum.i" per parameter once it has a buffer.
// Deliberately not here: `maximize`, sparse gradients.
#pragma once

#include <vector>

#include "nn/optimizer.h"

namespace posgrad {

struct SGDOptions {
  double lr = 1e-2;  // PyTorch requires lr explicitly; pass it
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;  // needs momentum > 0 and dampening == 0
};

class SGD : public Optimizer {
 public:
  explicit SGD(std::vector<Variable> params, const SGDOptions& options);
  const char* kind() const override { return "sgd"; }
  double momentum() const { return momentum_; }
  double dampening() const { return dampening_; }
  double weight_decay() const { return weight_decay_; }
  bool nesterov() const { return nesterov_; }

 protected:
  void update() override;
  void export_state(OptimizerState& out) const override;
  void import_state(const OptimizerState& in) override;

 private:
  void validate() const;
  double momentum_, dampening_, weight_decay_;
  bool nesterov_;
  std::vector<Tensor> buffers_;  // momentum buffers, undefined until the first update
};

}  // namespace posgrad
