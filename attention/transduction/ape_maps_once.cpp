// ApeMapsOncePerForward (see ape_maps_once.h).
#include "attention/transduction/ape_maps_once.h"

#include "autograd/functions.h"

namespace posgrad {

ApeMapsOncePerForward::MapsScope::MapsScope(ApeMapsOncePerForward& hook, int64_t tokens) : hook_(hook) {
  if (hook.table_.defined() || tokens < 1) return;
  // [I, W, ..., W^(tokens-1)] by doubling (nn/orthogonal.h), as the hook builds its own.
  hook.table_ = permute(hook.ape_->generators().powers(tokens - 1), {1, 0, 2, 3});  // [H, L, Dh, Dh]
  ++hook.tables_computed_;
  opened_ = true;
}

ApeMapsOncePerForward::MapsScope::~MapsScope() {
  if (opened_) hook_.table_ = Variable();
}

void ApeMapsOncePerForward::rotate(Variable& q, Variable& k, const PositionPair& positions) {
  const auto covered = [&](const Positions& side) {
    return !side.is_tree() && side.dims() == 1 && side.first() + side.tokens() <= table_.size(1);
  };
  if (!table_.defined() || !covered(positions.queries()) || !covered(positions.keys())) {
    ape_->rotate(q, k, positions);
    return;
  }
  const auto maps = [&](const Positions& side) { return narrow(table_, 1, side.first(), side.tokens()); };
  q = apply_token_maps(q, maps(positions.queries()));
  k = apply_token_maps(k, maps(positions.keys()));
}

}  // namespace posgrad
