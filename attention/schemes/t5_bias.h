// The "t5_bias" scheme: T5's bucketed relative position bias (Raffel et al. 2020). Each head
// learns one logit bias per bucket of the signed offset key - query; small distances get a
// bucket each, larger ones share logarithmically wider buckets up to `max_distance`, beyond
// which everything shares the last bucket:
//
//   n = query - key; bidirectional: half the buckets for n < 0 (key after query), |n| for the rest
//   bucket(|n|) = |n|                                                      if |n| < B/2
//               = min(B-1, B/2 + floor(log(|n| / (B/2)) / log(M / (B/2)) * (B - B/2)))  otherwise
//   (B = buckets per direction, M = max_distance)
//   logit[h, i, j] += bias[bucket(i, j), h]
//
// It is the scheme docs/tutorial-new-scheme.md builds step by step: a table over the relative
// grid (the `bias` of attention_terms.h), so it runs unchanged on the reference and fused paths.
// Options: buckets (32), max_distance (128), bidirectional (true). Sequences only.
// Deliberately not here: T5's sharing of one bias across layers (make one hook and pass it to
// every layer as a shared hook to get that).
// Shapes: letters of shape_legend.h (the B and M of the bucket formula are local, defined there).
#pragma once

#include "attention/registry.h"

namespace posgrad {

class T5Bias : public AttentionHook {
 public:
  T5Bias(int64_t heads, int64_t buckets, int64_t max_distance, bool bidirectional, Generator& gen);

  // The bucket of every relative offset (key - query) in `offsets`: int64, same length.
  std::vector<int64_t> buckets_of(const std::vector<int64_t>& offsets) const;

  AttentionTerms attention_terms(const PositionPair& positions, DType dtype) override;  // bias [H, R]
  std::string summary() const override;
  // The bias of every relative entry: [H, R] (differentiable in the bucket table).
  Variable relative_bias(const PositionPair& positions) const;

 private:
  int64_t heads_, buckets_, max_distance_;
  bool bidirectional_;
  Variable bias_;  // [buckets, H]
};

std::shared_ptr<AttentionHook> make_t5_bias(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
