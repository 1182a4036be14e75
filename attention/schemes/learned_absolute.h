// The "learned_absolute" scheme (Gehring et al. 2017; APE's "Absolute" baseline): a learned
// table E [P, D] added to the token embeddings, x [B, N, D] -> x + E[p] for the token's flat
// index p = 0..N-1 (row-major cell index on grids, index in the flattened sequence for trees).
//
// Options:
//   size      P, the number of rows (default: the context's N = prod(structure); required when
//             the context has no structure)
//   clamp     false (default): a position p >= P is an Error naming p and P;
//             true: E[min(p, P-1)], the APE baseline's behaviour past its table
//   init_std  the rows start N(0, init_std^2) (default 1, like nn.Embedding)
//
// An AbsoluteEncoding (attention_hook.h): the model adds it to its token embeddings before the
// first layer; attention refuses it.
//
// Parameter: "weight" [P, D]. Deliberately not here: per-axis tables for grids and tree
// positions (APE's baselines use the flattened index, so do we).
// Shapes: letters of shape_legend.h.
#pragma once

#include "attention/registry.h"

namespace posgrad {

class LearnedAbsolute : public AbsoluteEncoding {
 public:
  LearnedAbsolute(int64_t width, int64_t size, bool clamp, double init_std, Generator& gen);

  Variable embed(const Variable& x, const Positions& positions) override;
  std::string summary() const override;

  const Variable& weight() const { return weight_; }  // [P, D]
  int64_t size() const { return size_; }
  bool clamps() const { return clamp_; }

 private:
  int64_t width_, size_;
  bool clamp_;
  Variable weight_;
};

std::shared_ptr<AttentionHook> make_learned_absolute(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
