// Building the chosen optimizer (see optimizer_choice.h).
#include "apps/common/optimizer_choice.h"

#include "nn/adagrad.h"
#include "nn/adam.h"
#include "nn/sgd.h"
#include "tensor/error.h"

namespace posgrad::apps {

std::unique_ptr<Optimizer> make_optimizer(const OptimizerChoice& choice, std::vector<Variable> params) {
  if (choice.kind == "adam") {
    AdamOptions o;
    o.lr = choice.lr;
    return std::make_unique<Adam>(std::move(params), o);
  }
  if (choice.kind == "adamw") {
    AdamWOptions o;
    o.lr = choice.lr;
    if (choice.weight_decay) o.weight_decay = *choice.weight_decay;
    return std::make_unique<AdamW>(std::move(params), o);
  }
  if (choice.kind == "sgd") {
    SGDOptions o;
    o.lr = choice.lr;
    o.momentum = choice.momentum;
    return std::make_unique<SGD>(std::move(params), o);
  }
  if (choice.kind == "adagrad") {
    AdagradOptions o;
    o.lr = choice.lr;
    o.clip_per_tensor = choice.clip_per_tensor;
    return std::make_unique<Adagrad>(std::move(params), o);
  }
  fail("train.optimizer: unknown optimizer '{}' (valid: adam, adamw, sgd, adagrad)", choice.kind);
}

}  // namespace posgrad::apps
