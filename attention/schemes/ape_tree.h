// "ape_tree": algebraic positional encoding of trees (the APE paper's Branching). A kappa-ary
// tree has kappa branch generators per head, W_b = exp(A_b - A_b^T). A node with root-to-node
// word u = (b_1, ..., b_t) gets the map
//
//   M(u) = W_{b_1}^T W_{b_2}^T ... W_{b_t}^T        (the empty word, root / SOS / padding: I)
//   q~ = M(u_q) q,  k~ = M(u_k) k   =>  q~ . k~ = q^T M(u_q)^T M(u_k) k
//
// so a shared prefix cancels (W_b W_b^T = I): what is left is the upward path from the query
// (generators, deepest first) and the downward path to the key (transposes).
//   logit = (q~ . k~ / sqrt(Dh)) * decay^distance(u_q, u_k)
//
// The maps are computed once per rotate for the unique heap positions of the batch (one batched
// matmul per depth step over a table [W_0^T, ..., W_{kappa-1}^T, I]) and then gathered per token;
// side_maps does that for several sides at once, which ApeMapsOncePerForward
// (attention/transduction/ape_maps_once.h) uses to compute them once per forward of a model.
// The decay is the escape hatch of attention_terms.h (dense_modulation: a per-example [B, N, N]
// factor, not a table over a relative grid), so with decay only the reference path runs.
//
// Options:
//   branching       kappa, default 2 (must equal the positions' branching factor)
//   shared_heads    false (default, the paper: per-head generators); true: one set shared by all
//                   heads, as the released code does
//   mapping         intended (default): heap p -> the word of 0-indexed node p - 1 (Positions::
//                   tree_word); released: heap p -> the word of node p (the reference code's
//                   off-by-one, for comparisons); heap 0 is the identity in both
//   decay_distance  intended (default): |u| + |v| - 2 lcp(u, v); released: 2 (L - lcp_padded),
//                   L the longest word among the positions, words padded with kappa
//   init, trainable, decay (ape_common.h)
// Parameter: orthogonal.generators A [kappa*H, Dh, Dh] (generator b*H + h) or [kappa, Dh, Dh].
// Deliberately not here: sequences and grids (ape_sequence.h, ape_grid.h), tree traversal orders
// and causal masks over trees (the models and datasets decide them).
// Shapes: letters of shape_legend.h, plus kappa, the branching factor.
#pragma once

#include "attention/schemes/ape_common.h"

namespace posgrad {

enum class TreeMapping { Intended, Released };
enum class TreeDistance { Intended, Released };

// The branch word APE uses for heap position p (heap 0 -> empty word in both mappings).
std::vector<int64_t> ape_tree_word(int64_t heap, int64_t branching, TreeMapping mapping);

// Decay distances between every pair of tokens: heap [N] -> int64 [N, N], [B, N] -> [B, N, N].
// Released: L is the longest word among all positions in `heap` (the batch's unique positions).
Tensor ape_tree_distances(const Tensor& heap, int64_t branching, TreeMapping mapping, TreeDistance distance);

class ApeTree : public AttentionHook {
 public:
  ApeTree(int64_t heads, int64_t head_width, int64_t branching, bool shared_heads, TreeMapping mapping,
          TreeDistance distance, const ApeSettings& settings, Generator& gen);

  void rotate(Variable& q, Variable& k, const PositionPair& positions) override;
  // Without decay: nothing (rotate only). With decay: dense_modulation [B|1, 1, N, N].
  AttentionTerms attention_terms(const PositionPair& positions, DType dtype) override;
  std::string summary() const override;

  // The maps M of the given heap positions, in order: [P, H|1, Dh, Dh] (1 when heads share).
  Variable node_maps(const std::vector<int64_t>& heaps) const;
  // The maps of every token of each side (tree positions of this branching factor), from one
  // product chain over the unique heap positions of all the sides: per side, contiguous,
  // [H|1, N, Dh, Dh] for a heap [N] or [B, H|1, N, Dh, Dh] for a heap [B, N].
  std::vector<Variable> side_maps(const std::vector<Positions>& sides) const;
  // W_b for every branch: [kappa, H|1, Dh, Dh].
  Variable branch_matrices() const;
  const OrthogonalGenerators& generators() const { return *generators_; }
  int64_t branching() const { return branching_; }

 private:
  int64_t heads_, head_width_, branching_;
  bool shared_heads_;
  TreeMapping mapping_;
  TreeDistance distance_;
  ApeSettings settings_;
  std::shared_ptr<OrthogonalGenerators> generators_;
};

std::shared_ptr<AttentionHook> make_ape_tree(const HookContext& context, const HookOptions& options, Generator& gen);

}  // namespace posgrad
