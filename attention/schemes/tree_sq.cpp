// The "tree_sq" scheme (see tree_sq.h).
// Shapes: letters of shape_legend.h, plus Z word slots and F features per slot.
#include "attention/schemes/tree_sq.h"

#include <cmath>

#include "autograd/functions.h"
#include "nn/init.h"

namespace posgrad {

TreeSq::TreeSq(int64_t width, int64_t branching, int64_t max_depth, TreeSqTiling tiling, Generator& gen)
    : width_(width), branching_(branching), max_depth_(max_depth), tiling_(tiling) {
  if (branching < 2) fail("tree_sq: the branching factor must be >= 2, got {}", branching);
  if (max_depth < 1) fail("tree_sq: max_depth must be >= 1, got {}", max_depth);
  // Each factor is at most the width before they are multiplied (no overflow).
  const int64_t slots = branching <= width && max_depth <= width ? branching * max_depth : 0;
  if (width <= 0 || slots == 0 || width % slots != 0)
    fail("tree_sq: the width {} must be a positive multiple of the word slots, branching x max_depth = {} x {}", width,
         branching, max_depth);
  features_ = width / slots;
  Tensor w = Tensor::empty({features_}, kFloat32);
  init::uniform_(w, 0.7, 0.999, gen);
  w_ = register_parameter("w", w);
}

std::vector<int64_t> TreeSq::slot_exponents() const {
  std::vector<int64_t> e(static_cast<size_t>(branching_ * max_depth_));
  for (int64_t z = 0; z < branching_ * max_depth_; ++z)
    e[static_cast<size_t>(z)] = tiling_ == TreeSqTiling::Levels ? z / branching_ : z % max_depth_;
  return e;
}

Tensor TreeSq::word_stacks(const Tensor& heap) const {
  if (!heap.defined() || heap.dtype() != kInt64 || (heap.dim() != 1 && heap.dim() != 2))
    fail("tree_sq: heap positions must be int64 [N] or [B, N], got {}", heap.defined() ? heap.describe() : "undefined");
  const int64_t Z = branching_ * max_depth_;
  const std::vector<int64_t> heaps = heap.to(kCPU).contiguous().to_vector<int64_t>();
  std::vector<double> stacks(heaps.size() * static_cast<size_t>(Z), 0.0);
  for (size_t i = 0; i < heaps.size(); ++i) {
    const std::vector<int64_t> word = Positions::tree_word(heaps[i], branching_);
    const int64_t t = static_cast<int64_t>(word.size());
    for (int64_t l = 0; l < std::min(t, max_depth_); ++l)  // level l holds step t - l (most recent first)
      stacks[i * static_cast<size_t>(Z) + static_cast<size_t>(l * branching_ + word[static_cast<size_t>(t - 1 - l)])] = 1.0;
  }
  Shape shape = heap.shape();
  shape.push_back(Z);
  return Tensor::from_vector(stacks, shape);
}

Variable TreeSq::slot_weights() const {
  const Variable p = tanh(w_);  // [F]
  std::vector<Variable> powers{Variable(Tensor::ones({features_}, p.dtype(), p.value().device()))};  // p^0 .. p^(max_depth - 1), each [F]
  for (int64_t d = 1; d < max_depth_; ++d) powers.push_back(powers.back() * p);
  const Variable scale = sqrt((1.0 - p * p) * (static_cast<double>(features_) / 2.0));  // [F]
  const Variable rows = stack(powers, 0) * unsqueeze(scale, 0);                           // [max_depth, F]
  const std::vector<int64_t> e = slot_exponents();
  return index_select(rows, 0, Tensor::from_vector(e, {static_cast<int64_t>(e.size())}).to(w_.device()));  // [Z, F]
}

Variable TreeSq::embed(const Variable& x, const Positions& positions) {
  if (!positions.is_tree())
    fail("tree_sq: needs tree (heap) positions, got {} (Tree-SQ encodes tree words)", positions.describe());
  if (positions.branching() != branching_)
    fail("tree_sq: built for branching {}, but the positions have branching {}", branching_, positions.branching());
  if (x.dim() != 3 || x.size(2) != width_ || x.size(1) != positions.tokens())
    fail("tree_sq: embeddings must be [B, {}, {}], got {}", positions.tokens(), width_, x.value().describe());
  const Tensor& heap = positions.heap();
  if (heap.dim() == 2 && heap.size(0) != x.size(0))
    fail("tree_sq: heap positions {} do not match the batch of {} trees", heap.describe(), x.size(0));
  const int64_t Z = branching_ * max_depth_, N = x.size(1);
  const Tensor onehot = word_stacks(heap).to(x.dtype()).to(x.device());       // [B|1.., N, Z]
  const Variable weight = slot_weights();                                     // [Z, F]
  Variable pe = unsqueeze(Variable(onehot), -1) * weight;                     // [B|-, N, Z, F]
  pe = reshape(pe, heap.dim() == 2 ? Shape{heap.size(0), N, Z * features_} : Shape{1, N, Z * features_});
  return x + pe;
}

std::string TreeSq::summary() const {
  return fmt::format("tree_sq (kappa={}, max_depth={}, F={}, tiling={})", branching_, max_depth_, features_,
                     tiling_ == TreeSqTiling::Levels ? "levels" : "released");
}

std::shared_ptr<AttentionHook> make_tree_sq(const HookContext& context, const HookOptions& options, Generator& gen) {
  const std::string tiling = options.choice("tiling", "levels", {"levels", "released"});
  return std::make_shared<TreeSq>(context.width, options.integer("branching", 2), options.integer("max_depth", 8),
                                  tiling == "levels" ? TreeSqTiling::Levels : TreeSqTiling::Released, gen);
}

}  // namespace posgrad
