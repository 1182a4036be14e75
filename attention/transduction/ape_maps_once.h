// ApeMapsOncePerForward: APE the paper's way in a model with many attentions. The released code
// computes the per-token maps [I, W, W^2, ...] once per forward and shares them with every layer
// and with encoder-self, decoder-self and cross attention (spec ape.md 1 and 3.1); the "ape" hook
// alone computes them in each attention call. This hook wraps one ApeSequence: while a
// MapsScope is open it rotates queries and keys with rows of one table, computed when the scope
// opens; outside a scope (or past the table's end) it lets the wrapped hook compute its maps as
// usual. The numbers are the same either way; only the work (and the autograd graph) differ.
// Everything else (the decay table, the summary) is the wrapped hook's.
// It owns no parameters: the model registers the wrapped ApeSequence ("positional") and gives
// this hook to its attentions as a shared hook.
// Deliberately not here: trees (ape_tree computes its maps per call for the batch's heaps).
// Shapes: letters of shape_legend.h (L the table's tokens).
#pragma once

#include "attention/schemes/ape_sequence.h"

namespace posgrad {

class ApeMapsOncePerForward : public AttentionHook {
 public:
  explicit ApeMapsOncePerForward(std::shared_ptr<ApeSequence> ape) : ape_(std::move(ape)) {}

  // Opens the table of positions 0..tokens-1 unless an outer scope holds one; closes it at the
  // end of the scope that opened it.
  class MapsScope {
   public:
    MapsScope(ApeMapsOncePerForward& hook, int64_t tokens);
    ~MapsScope();
    MapsScope(const MapsScope&) = delete;
    MapsScope& operator=(const MapsScope&) = delete;

   private:
    ApeMapsOncePerForward& hook_;
    bool opened_ = false;
  };

  void rotate(Variable& q, Variable& k, const PositionPair& positions) override;
  AttentionTerms attention_terms(const PositionPair& positions, DType dtype) override {
    return ape_->attention_terms(positions, dtype);
  }
  std::string summary() const override { return ape_->summary() + ", maps once per forward"; }
  // How many tables were computed so far (tests count them).
  int64_t tables_computed() const { return tables_computed_; }

 private:
  std::shared_ptr<ApeSequence> ape_;
  Variable table_;  // [H, L, Dh, Dh] while a scope is open
  int64_t tables_computed_ = 0;
};

}  // namespace posgrad
