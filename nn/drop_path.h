// DropPath (stochastic depth, Huang et al. 2016): in training, a residual branch's output is
// zeroed for whole examples, each with probability p, by one Bernoulli draw per example (mask
// [B, 1, ..., 1]); in eval mode, or with p = 0, it passes through unchanged.
//
//   rescale = true   kept examples are scaled by 1 / (1 - p), so the expectation equals the
//                    input (timm's drop_path, the usual form)
//   rescale = false  kept examples are passed as they are (the APE repository's CCT, spec ape.md
//                    section 10 item 11): in training the branch's expectation is (1 - p) times
//                    what eval mode passes
//
// Masks come from a Philox Generator (owned, or shared as with Dropout), so runs are reproducible.
// Deliberately not here: the schedule of p over layers (the model's: CCT uses p_l = rate * l /
// (L - 1)), elementwise dropout (dropout.h).
// Shapes: letters of shape_legend.h.
#pragma once

#include <memory>

#include "nn/module.h"
#include "tensor/random.h"

namespace posgrad {

// The function behind DropPath: x [B, ...] -> [B, ...]. p in [0, 1).
Variable drop_path(const Variable& x, double p, bool rescale, bool training, Generator& gen);

class DropPath : public Module {
 public:
  DropPath(double p, bool rescale, uint64_t seed = 0);
  DropPath(double p, bool rescale, std::shared_ptr<Generator> gen);

  Variable forward(const Variable& x) override;  // [B, ...] -> [B, ...]

  double p() const { return p_; }
  bool rescale() const { return rescale_; }
  Generator& generator() { return *gen_; }  // to save or restore its state (checkpoints)
  std::string extra_repr() const override;

 private:
  double p_;
  bool rescale_;
  std::shared_ptr<Generator> gen_;
};

}  // namespace posgrad
