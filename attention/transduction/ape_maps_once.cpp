// ApeMapsOncePerForward (see ape_maps_once.h).
// Shapes: letters of shape_legend.h.
#include "attention/transduction/ape_maps_once.h"

#include <algorithm>

#include "autograd/functions.h"

namespace posgrad {

namespace {

// Whether two Positions place their tokens alike (the maps of one serve the other).
bool same_positions(const Positions& a, const Positions& b) {
  if (a.kind() != b.kind() || a.tokens() != b.tokens()) return false;
  if (!a.is_tree()) return a.structure() == b.structure() && a.first() == b.first();
  if (a.branching() != b.branching() || a.heap().shape() != b.heap().shape()) return false;
  return a.heap().to(kCPU).to_vector<int64_t>() == b.heap().to(kCPU).to_vector<int64_t>();
}

}  // namespace

ApeMapsOncePerForward::MapsScope::MapsScope(ApeMapsOncePerForward& hook, std::vector<Positions> sides) : hook_(hook) {
  const bool some_side_empty = std::any_of(sides.begin(), sides.end(), [](const Positions& s) { return s.tokens() < 1; });
  if (!hook.sides_.empty() || sides.empty() || some_side_empty) return;
  hook.maps_ = hook.maps_of(sides);
  hook.sides_ = std::move(sides);
  ++hook.tables_computed_;
  opened_ = true;
}

ApeMapsOncePerForward::MapsScope::~MapsScope() {
  if (!opened_) return;
  hook_.sides_.clear();
  hook_.maps_.clear();
}

std::vector<Variable> ApeMapsOncePerForward::maps_of(const std::vector<Positions>& sides) const {
  if (tree_) return tree_->side_maps(sides);
  // One table [I, W, ..., W^last] by doubling (nn/orthogonal.h) for the furthest token of all
  // sides, as the hook builds its own; each side takes its rows.
  int64_t last = 0;
  for (const Positions& side : sides) {
    if (side.is_tree() || side.dims() != 1)
      fail("ape: maps once per forward need sequence positions, got {} (use ape_tree for trees)", side.describe());
    last = std::max(last, side.first() + side.tokens() - 1);
  }
  const Variable table = permute(sequence_->generators().powers(last), {1, 0, 2, 3});  // [H, L, Dh, Dh]
  std::vector<Variable> maps;
  for (const Positions& side : sides) maps.push_back(narrow(table, 1, side.first(), side.tokens()));
  return maps;
}

Variable ApeMapsOncePerForward::held_maps(const Positions& side) const {
  for (size_t i = 0; i < sides_.size(); ++i)
    if (same_positions(sides_[i], side)) return maps_[i];
  return Variable();
}

void ApeMapsOncePerForward::rotate(Variable& q, Variable& k, const PositionPair& positions) {
  const Variable query_maps = held_maps(positions.queries());
  const Variable key_maps = positions.is_self() ? query_maps : held_maps(positions.keys());
  if (!query_maps.defined() || !key_maps.defined()) {
    ++rotations_without_held_maps_;
    ape_->rotate(q, k, positions);
    return;
  }
  q = apply_token_maps(q, query_maps);
  k = apply_token_maps(k, key_maps);
}

}  // namespace posgrad
