// ApeMapsOncePerForward: APE the paper's way in a model with many attentions. The released code
// computes the per-token maps once per forward and shares them with every layer and with
// encoder-self, decoder-self and cross attention (spec ape.md 1, 3.1 and 5): for sequences the
// table [I, W, W^2, ...], for trees the maps of the union of the batch's unique encoder and
// decoder heap positions, gathered per token. The "ape" and "ape_tree" hooks alone compute them
// in each attention call. This hook wraps one of them: while a MapsScope is open it rotates
// queries and keys with the maps of the scope's sides (the Positions the model's attentions will
// read), computed together when the scope opens; a side that is not one of them (or no open
// scope) lets the wrapped hook compute its maps as usual. The numbers are the same either way;
// only the work (and the autograd graph: the maps are one Variable, used by every layer, so their
// gradient flows once into the generators) differ. Everything else (the decay, the summary) is
// the wrapped hook's.
// It owns no parameters: the model registers the wrapped hook ("positional") and gives this hook
// to its attentions as a shared hook.
// Deliberately not here: grids (ape_grid computes its maps per call; no model here shares them).
// Shapes: letters of shape_legend.h.
#pragma once

#include "attention/schemes/ape_sequence.h"
#include "attention/schemes/ape_tree.h"

namespace posgrad {

class ApeMapsOncePerForward : public AttentionHook {
 public:
  explicit ApeMapsOncePerForward(std::shared_ptr<ApeSequence> ape) : ape_(ape), sequence_(std::move(ape)) {}
  explicit ApeMapsOncePerForward(std::shared_ptr<ApeTree> ape) : ape_(ape), tree_(std::move(ape)) {}

  // Computes the maps of every token of `sides` unless an outer scope holds maps (or a side has
  // no tokens); forgets them at the end of the scope that computed them.
  class MapsScope {
   public:
    MapsScope(ApeMapsOncePerForward& hook, std::vector<Positions> sides);
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
  // How many times a scope computed maps so far, and how many rotations computed their own
  // because a side was not one of an open scope's (tests count them).
  int64_t tables_computed() const { return tables_computed_; }
  int64_t rotations_without_held_maps() const { return rotations_without_held_maps_; }

 private:
  // The maps of each side: sequences [H, N, Dh, Dh] (rows of one table W^0..W^last), trees as
  // ApeTree::side_maps.
  std::vector<Variable> maps_of(const std::vector<Positions>& sides) const;
  // The maps of `side` if it is one of the open scope's sides, else undefined.
  Variable held_maps(const Positions& side) const;

  std::shared_ptr<AttentionHook> ape_;     // the wrapped hook (one of the two below)
  std::shared_ptr<ApeSequence> sequence_;
  std::shared_ptr<ApeTree> tree_;
  std::vector<Positions> sides_;  // while a scope is open: its sides ...
  std::vector<Variable> maps_;    // ... and their maps
  int64_t tables_computed_ = 0, rotations_without_held_maps_ = 0;
};

}  // namespace posgrad
