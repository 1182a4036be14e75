// The optimizer an app's `train.optimizer` setting names, built over a model's parameters:
// adam, adamw, sgd (with momentum) or adagrad (with the adaptive-span per-tensor step clip).
// Every field not listed for a kind is ignored by it; everything else is the optimizer's own
// default (nn/adam.h, nn/sgd.h, nn/adagrad.h).
//
// Deliberately does not: build learning-rate schedules, or restore optimizer state (checkpoints).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "nn/optimizer.h"

namespace posgrad::apps {

struct OptimizerChoice {
  std::string kind;                    // adam | adamw | sgd | adagrad
  double lr = 1e-3;                    // every kind
  std::optional<double> weight_decay;  // adamw (decoupled); unset: AdamW's default, 1e-2
  double momentum = 0.9;               // sgd
  double clip_per_tensor = 0.0;        // adagrad (0: off)
};

// An unknown kind is an Error that lists the valid ones.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerChoice& choice, std::vector<Variable> params);

}  // namespace posgrad::apps
