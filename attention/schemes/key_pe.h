// The "key_pe" scheme: the learned key position embedding of the adaptive-span model
// (Sukhbaatar et al. 2019, spec adaptive_span.md section 3.1). One vector per distance,
// P [Dh, S] (S the maximum span, option max_span), the same for every head, adds to the score of
// the key at distance d = query - key, 1 <= d <= S:
//
//   positional(i, j) = q_i . P[:, S - d] / sqrt(Dh)
//
// (the last column is distance 1, as the original code's key_pe[:, :, -W:]). key_range is
// {-S, -1}: the current token, later keys and keys beyond S have no column and are not seen.
// Implementation: the query_table [H, R, Dh] of attention_terms.h over the relative grid, so it
// runs on both paths. The original model shares one P between its layers: build one hook and pass
// it to every layer as a shared hook; KeyPositionEmbedding(heads, table) uses a parameter the
// model registers itself (the char LM's "key_pe"), while the registry's hook owns "weight".
// Options: max_span (default N - 1 of the context). 1-D sequences only (grids and trees are an
// Error). Deliberately not here: attending to the current token (no column for d = 0).
// Shapes: letters of shape_legend.h; S here is the maximum span, not a grid size.
#pragma once

#include "attention/registry.h"

namespace posgrad {

class KeyPositionEmbedding : public AttentionHook {
 public:
  // Owns its table "weight" [Dh, S] ~ N(0, 1).
  KeyPositionEmbedding(int64_t heads, int64_t head_width, int64_t max_span, Generator& gen);
  // Uses `table` [Dh, S], registered by its owner (not a parameter of this module).
  KeyPositionEmbedding(int64_t heads, Variable table);

  std::optional<OffsetBox> key_range(const PositionPair& positions) const override;  // {-S, -1}
  AttentionTerms attention_terms(const PositionPair& positions, DType dtype) override;  // query_table
  std::string summary() const override;
  const Variable& table() const { return table_; }  // [Dh, S]

 private:
  int64_t heads_;
  Variable table_;
};

std::shared_ptr<AttentionHook> make_key_pe(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
