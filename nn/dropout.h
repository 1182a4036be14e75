// Dropout (inverted): in training, each element is kept with probability 1 - p and scaled by
// 1 / (1 - p), so the expectation equals the input; in eval mode, or with p = 0, the input passes
// through unchanged. Masks come from a Philox Generator, so they are reproducible and the same on
// every device. The module owns its generator (seeded), or shares one passed as a shared_ptr
// (so one generator, saved in a checkpoint, drives every dropout of a model).
//
// Deliberately not here: dropout variants (alpha, spatial/channel, DropPath).
#pragma once

#include <memory>

#include "nn/module.h"
#include "tensor/random.h"

namespace posgrad {

// The function behind Dropout: x [...] -> [...]. p in [0, 1]; p = 1 gives zeros.
Variable dropout(const Variable& x, double p, bool training, Generator& gen);

class Dropout : public Module {
 public:
  explicit Dropout(double p, uint64_t seed = 0);
  Dropout(double p, std::shared_ptr<Generator> gen);

  Variable forward(const Variable& x) override;  // [...] -> [...]

  double p() const { return p_; }
  Generator& generator() { return *gen_; }  // to save or restore its state (checkpoints)
  std::string extra_repr() const override;

 private:
  double p_;
  std::shared_ptr<Generator> gen_;
};

}  // namespace posgrad
