// Positions: where one side's tokens (the queries or the keys) of an attention call sit, and
// PositionPair: the two sides of one call together, which is what the positional hooks read.
//
// Three kinds of Positions:
//   * sequence  N tokens at indices first..first+N-1 (a 1-D grid with structure {N}; first = 0
//               unless given: the queries of a segment over a memory start after it);
//   * grid      an n-D grid with structure S = {S_0, ..., S_{n-1}}; tokens are the cells in
//               row-major order (last dim fastest), N = prod(S);
//   * tree      one heap position per token ([N], shared by the batch, or [B, N]): 1 is the root,
//               node p's children are kappa*(p-1)+2 .. kappa*(p-1)+kappa+1 (2p and 2p+1 for binary
//               trees), 0 means "no tree position" (SOS, padding) and maps to the identity.
//
// A PositionPair is self-attention (one Positions for both sides), attention over a memory (keys
// a sequence of N, queries its last Nq: PositionPair::memory) or cross-attention (queries and
// keys each with their own Positions of one kind and dimension). Grid kinds describe the relative
// grid: every offset r = key - query the pair can have, per dim from lo_d = (first key coordinate)
// - (last query coordinate) to hi_d = (last key) - (first query), Sq_d + Sk_d - 1 values,
// enumerated row-major. For self-attention that is (2S_0-1) x ... x (2S_{n-1}-1) with entry
// sum_d (o_d + S_d - 1) * stride_d, as before pairs existed. Relative encodings are evaluated
// once per forward on this grid (R entries).
//
// Deliberately not here: learned or batch-dependent positions for grids, grids that do not start
// at 0, and anything about how a scheme uses positions.
// Shapes: letters of shape_legend.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace posgrad {

class Positions {
 public:
  enum class Kind { Sequence, Grid, Tree };

  static Positions sequence(int64_t N, int64_t first = 0);
  static Positions grid(std::vector<int64_t> structure);
  // heap int64 [N] or [B, N]; positions deeper than max_depth are an error.
  static Positions tree(const Tensor& heap, int64_t branching = 2, int64_t max_depth = 16);

  Kind kind() const { return kind_; }
  bool is_tree() const { return kind_ == Kind::Tree; }
  std::string describe() const;
  int64_t tokens() const { return tokens_; }  // N
  int64_t dims() const { return static_cast<int64_t>(structure_.size()); }  // n (0 for trees)
  const std::vector<int64_t>& structure() const;  // S (grids and sequences only)

  // ---- grids and sequences
  int64_t first() const { return first_; }      // index of a sequence's first token (grids: 0)
  Tensor coordinates() const;                   // int64 [N, n] (a sequence's start first())
  // int64 [N]: each token's place in the flattened order, first + i (a sequence's index).
  Tensor flat_indices() const;

  // ---- trees
  const Tensor& heap() const;                   // int64 [N] or [B, N]
  int64_t branching() const { return branching_; }
  int64_t max_depth() const { return max_depth_; }
  // The branch word of heap position p: the intended mapping of the APE spec (heap p is the
  // 0-indexed node p-1; node n > 0 has parent (n-1) div kappa and branch (n-1) mod kappa). The
  // root (p = 1, node 0) has the empty word, and so has p = 0 (SOS / padding): both map to the
  // identity. Example (binary): p = 2 -> [0], p = 3 -> [1], p = 5 -> [0, 1].
  static std::vector<int64_t> tree_word(int64_t heap, int64_t branching);
  // Tree distance |u| + |v| - 2 lcp(u, v) between the words of two heap positions.
  static int64_t tree_distance(int64_t heap_a, int64_t heap_b, int64_t branching);

 private:
  Kind kind_ = Kind::Sequence;
  int64_t tokens_ = 0;
  std::vector<int64_t> structure_;
  Tensor heap_;
  int64_t first_ = 0;
  int64_t branching_ = 0, max_depth_ = 0;
  friend class PositionPair;
  struct Cache {
    Tensor dense_relative_index, dense_row_relative_index;  // of the self pair (PositionPair)
  };
  std::shared_ptr<Cache> cache_ = std::make_shared<Cache>();
};

class PositionPair {
 public:
  PositionPair(const Positions& self);  // NOLINT(google-explicit-constructor): self-attention
  // Cross-attention: queries and keys of the same kind (two sequences or grids of one dimension,
  // or two trees of one branching factor).
  PositionPair(const Positions& queries, const Positions& keys);
  // A segment over a memory: keys the sequence 0..N-1, queries its last Nq tokens.
  static PositionPair memory(int64_t N, int64_t Nq);

  const Positions& queries() const { return queries_; }
  const Positions& keys() const { return keys_; }
  bool is_self() const { return cache_ == keys_.cache_; }  // built from one Positions
  bool is_tree() const { return keys_.is_tree(); }
  int64_t dims() const { return keys_.dims(); }  // n
  std::string describe() const;

  // ---- the relative grid (grids and sequences)
  const std::vector<int64_t>& relative_lo() const { return lo_; }  // smallest offset per dim
  const std::vector<int64_t>& relative_hi() const { return hi_; }  // largest offset per dim
  int64_t relative_size() const;                // R = prod(hi_d - lo_d + 1)
  Tensor relative_offsets() const;              // int64 [R, n]: offset of every relative entry
  // [R, n] in `dtype`: offset_d / max(-lo_d, hi_d), in [-1, 1]; for self-attention offset_d /
  // (S_d - 1), evenly spaced (S_d = 1 gives -1, as the posattn reference does).
  Tensor normalised_relative_grid(DType dtype) const;
  int64_t relative_index(const std::vector<int64_t>& offset) const;
  // int64 [Nq, Nk]: relative entry of (key j - query i). Built on first use and shared by every
  // copy of this pair (for self-attention: of its Positions), so all layers of a forward reuse one
  // table (first use from one thread).
  const Tensor& dense_relative_index() const;
  // int64 [Nq, Nk]: i * R + dense_relative_index[i, j], the element of a row-major [Nq, R] table
  // that query i reads for key j (cached like dense_relative_index).
  const Tensor& dense_row_relative_index() const;

 private:
  Positions queries_, keys_;
  std::vector<int64_t> lo_, hi_;
  std::shared_ptr<Positions::Cache> cache_;  // the keys' Positions cache for self-attention
};

}  // namespace posgrad
