// The "ape_tree" scheme (see ape_tree.h).
// Shapes: letters of shape_legend.h; local: kappa branches, Hs = H (1 with shared_heads), U the
// unique heap positions of the batch.
#include "attention/schemes/ape_tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace posgrad {

namespace {

const char* mapping_name(TreeMapping m) { return m == TreeMapping::Intended ? "intended" : "released"; }
const char* distance_name(TreeDistance d) { return d == TreeDistance::Intended ? "intended" : "released"; }

// The distinct heap positions of `heap` (sorted) and, per element, the index of its position.
struct UniquePositions {
  std::vector<int64_t> values;
  std::vector<int64_t> index;  // one per element of heap, row-major
};

UniquePositions unique_positions(const Tensor& heap) {
  const std::vector<int64_t> all = heap.to_vector<int64_t>();
  std::map<int64_t, int64_t> slot;
  for (int64_t p : all) slot.emplace(p, 0);
  UniquePositions u;
  for (auto& [p, i] : slot) {
    i = static_cast<int64_t>(u.values.size());
    u.values.push_back(p);
  }
  u.index.reserve(all.size());
  for (int64_t p : all) u.index.push_back(slot.at(p));
  return u;
}

// Fails unless `side` is tree positions of the given branching factor (names the hook).
void check_tree_side(const Positions& side, const char* hook, int64_t branching) {
  if (!side.is_tree()) fail("{}: needs tree positions, got {}", hook, side.describe());
  if (side.branching() != branching)
    fail("{}: built for branching factor {}, but the positions have {}", hook, branching, side.branching());
}

// The heap positions of both sides, queries first ([Nq + Nk] or [B, Nq + Nk]; self-attention:
// the one side), so the distances are computed once for both.
Tensor joined_heap(const PositionPair& positions, const char* hook, int64_t branching) {
  if (!positions.is_tree()) fail("{}: needs tree positions, got {}", hook, positions.describe());
  check_tree_side(positions.keys(), hook, branching);
  if (positions.is_self()) return positions.keys().heap();
  Tensor hq = positions.queries().heap(), hk = positions.keys().heap();
  if (hq.dim() != hk.dim()) {  // one side shared by the batch: repeat it per row
    const int64_t B = std::max(hq.dim() == 2 ? hq.size(0) : 1, hk.dim() == 2 ? hk.size(0) : 1);
    if (hq.dim() == 1) hq = hq.reshape({1, hq.size(0)}).expand({B, hq.size(0)}).contiguous();
    if (hk.dim() == 1) hk = hk.reshape({1, hk.size(0)}).expand({B, hk.size(0)}).contiguous();
  }
  return cat(std::vector<Tensor>{hq, hk}, -1);
}

}  // namespace

std::vector<int64_t> ape_tree_word(int64_t heap, int64_t branching, TreeMapping mapping) {
  if (mapping == TreeMapping::Intended || heap == 0) return Positions::tree_word(heap, branching);
  return Positions::tree_word(heap + 1, branching);  // released: heap p reads the word of node p
}

Tensor ape_tree_distances(const Tensor& heap, int64_t branching, TreeMapping mapping, TreeDistance distance) {
  if (!heap.defined() || heap.dtype() != DType::Int64 || (heap.dim() != 1 && heap.dim() != 2))
    fail("ape_tree: heap positions must be int64 [N] or [B, N], got {}", heap.defined() ? heap.describe() : "undefined");
  const Tensor h = heap.to(kCPU).contiguous();
  const UniquePositions u = unique_positions(h);
  const int64_t U = static_cast<int64_t>(u.values.size());
  std::vector<std::vector<int64_t>> words;
  size_t longest = 0;
  for (int64_t p : u.values) {
    words.push_back(ape_tree_word(p, branching, mapping));
    longest = std::max(longest, words.back().size());
  }
  // Pairwise distances between the unique positions.
  std::vector<int64_t> table(static_cast<size_t>(U * U));
  for (int64_t a = 0; a < U; ++a)
    for (int64_t b = 0; b < U; ++b) {
      const auto &x = words[static_cast<size_t>(a)], &y = words[static_cast<size_t>(b)];
      int64_t d = 0;
      if (distance == TreeDistance::Intended) {
        size_t lcp = 0;
        while (lcp < x.size() && lcp < y.size() && x[lcp] == y[lcp]) ++lcp;
        d = static_cast<int64_t>(x.size() + y.size() - 2 * lcp);
      } else {
        // Words right-padded with kappa to the longest length L; the padding symbol matches itself.
        auto symbol = [&](const std::vector<int64_t>& w, size_t i) { return i < w.size() ? w[i] : branching; };
        size_t lcp = 0;
        while (lcp < longest && symbol(x, lcp) == symbol(y, lcp)) ++lcp;
        d = static_cast<int64_t>(2 * (longest - lcp));
      }
      table[static_cast<size_t>(a * U + b)] = d;
    }
  const int64_t N = h.size(-1), B = h.dim() == 2 ? h.size(0) : 1;
  std::vector<int64_t> out(static_cast<size_t>(B * N * N));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < N; ++j)
        out[static_cast<size_t>((b * N + i) * N + j)] =
            table[static_cast<size_t>(u.index[static_cast<size_t>(b * N + i)] * U + u.index[static_cast<size_t>(b * N + j)])];
  return h.dim() == 2 ? Tensor::from_vector(out, {B, N, N}) : Tensor::from_vector(out, {N, N});
}

ApeTree::ApeTree(int64_t heads, int64_t head_width, int64_t branching, bool shared_heads, TreeMapping mapping,
                 TreeDistance distance, const ApeSettings& settings, Generator& gen)
    : heads_(heads),
      head_width_(head_width),
      branching_(branching),
      shared_heads_(shared_heads),
      mapping_(mapping),
      distance_(distance),
      settings_(settings) {
  if (branching < 2) fail("ape_tree: the branching factor must be >= 2, got {}", branching);
  generators_ = add_ape_generators(*this, "orthogonal", branching * (shared_heads ? 1 : heads), head_width, settings, gen);
}

Variable ApeTree::branch_matrices() const {
  const int64_t Hs = shared_heads_ ? 1 : heads_;
  return reshape(generators_->matrices(), {branching_, Hs, head_width_, head_width_});
}

Variable ApeTree::node_maps(const std::vector<int64_t>& heaps) const {
  const int64_t P = static_cast<int64_t>(heaps.size()), Hs = shared_heads_ ? 1 : heads_, Dh = head_width_;
  std::vector<std::vector<int64_t>> words;
  size_t depth = 0;
  for (int64_t p : heaps) {
    words.push_back(ape_tree_word(p, branching_, mapping_));
    depth = std::max(depth, words.back().size());
  }
  const Variable w = branch_matrices();  // [kappa, Hs, Dh, Dh]
  const Tensor r = Tensor::arange(Dh, w.dtype(), w.device());
  const Tensor eye = eq(r.reshape({Dh, 1}), r.reshape({1, Dh})).reshape({1, 1, Dh, Dh}).expand({1, Hs, Dh, Dh});
  if (depth == 0) return Variable(eye.expand({P, Hs, Dh, Dh}).contiguous());
  // Factors of step t: W_b^T for branch b, I (entry kappa) past the end of a word.
  const Variable factors = cat({transpose(w, -1, -2), Variable(eye)}, 0);  // [kappa + 1, Hs, Dh, Dh]
  Variable maps;
  for (size_t t = 0; t < depth; ++t) {
    std::vector<int64_t> symbol(static_cast<size_t>(P));
    for (int64_t i = 0; i < P; ++i) {
      const auto& word = words[static_cast<size_t>(i)];
      symbol[static_cast<size_t>(i)] = t < word.size() ? word[t] : branching_;
    }
    const Variable step = index_select(factors, 0, Tensor::from_vector(symbol, {P}).to(w.device()));  // [P, Hs, Dh, Dh]
    maps = t == 0 ? step : matmul(maps, step);  // M <- M W_{b_t}^T
  }
  return maps;
}

std::vector<Variable> ApeTree::side_maps(const std::vector<Positions>& sides) const {
  // The heaps of all sides, flattened and joined: one unique set, one product chain.
  std::vector<Tensor> heaps;
  for (const Positions& side : sides) {
    check_tree_side(side, "ape_tree", branching_);
    heaps.push_back(side.heap().to(kCPU).contiguous().reshape({side.heap().numel()}));
  }
  const UniquePositions u = unique_positions(cat(heaps, 0));
  const Variable unique_maps = node_maps(u.values);  // [U, Hs, Dh, Dh]
  const Tensor index = Tensor::from_vector(u.index, {static_cast<int64_t>(u.index.size())}).to(unique_maps.device());
  const int64_t Hs = shared_heads_ ? 1 : heads_, Dh = head_width_;
  std::vector<Variable> maps;
  int64_t start = 0;
  for (const Positions& side : sides) {
    const Tensor& heap = side.heap();
    const int64_t count = heap.numel(), N = heap.size(-1);
    const Variable gathered = index_select(unique_maps, 0, index.narrow(0, start, count));  // [N or B*N, Hs, Dh, Dh]
    start += count;
    if (heap.dim() == 1) {
      maps.push_back(contiguous(permute(gathered, {1, 0, 2, 3})));  // [Hs, N, Dh, Dh]
    } else {
      maps.push_back(contiguous(permute(reshape(gathered, {heap.size(0), N, Hs, Dh, Dh}), {0, 2, 1, 3, 4})));  // [B, Hs, N, Dh, Dh]
    }
  }
  return maps;
}

void ApeTree::rotate(Variable& q, Variable& k, const PositionPair& positions) {
  check_ape_qk("ape_tree", q, k, heads_, head_width_);
  for (const Positions* side : {&positions.queries(), &positions.keys()})
    if (side->is_tree() && side->heap().dim() == 2 && side->heap().size(0) != q.size(0))
      fail("ape_tree: heap positions {} do not match the batch of {} sequences", side->heap().describe(), q.size(0));
  if (positions.is_self()) {
    const Variable maps = side_maps({positions.keys()}).front();  // once for queries and keys
    q = apply_token_maps(q, maps);
    k = apply_token_maps(k, maps);
    return;
  }
  const std::vector<Variable> maps = side_maps({positions.queries(), positions.keys()});
  q = apply_token_maps(q, maps[0]);
  k = apply_token_maps(k, maps[1]);
}

AttentionTerms ApeTree::attention_terms(const PositionPair& positions, DType dtype) {
  if (!settings_.decays()) return {};
  // The escape hatch: decay^distance depends on each example's heap positions, a [B|1, 1, Nq, Nk]
  // factor rather than a table over a relative grid, so only the reference path applies it.
  const Tensor heap = joined_heap(positions, "ape_tree", branching_);
  const int64_t B = heap.dim() == 2 ? heap.size(0) : 1, Nq = positions.queries().tokens(), Nk = positions.keys().tokens();
  Tensor d = ape_tree_distances(heap, branching_, mapping_, distance_);  // [B|-, N, N] over the joined heap
  if (!positions.is_self()) d = d.narrow(-2, 0, Nq).narrow(-1, Nq, Nk).contiguous();
  AttentionTerms terms;
  terms.dense_modulation = decay_factors(d.to_vector<int64_t>(), {B, 1, Nq, Nk}, settings_.decay, dtype, kCPU);
  terms.dense_modulation_owner = summary();
  return terms;
}

std::string ApeTree::summary() const {
  return fmt::format("ape_tree (kappa={}, H={}, Dh={}, {}, mapping={}, decay_distance={}, {})", branching_, heads_,
                     head_width_, shared_heads_ ? "shared heads" : "per-head", mapping_name(mapping_),
                     distance_name(distance_), settings_.describe());
}

std::shared_ptr<AttentionHook> make_ape_tree(const HookContext& context, const HookOptions& options, Generator& gen) {
  const int64_t branching = options.integer("branching", 2);
  const bool shared_heads = options.flag("shared_heads", false);
  const TreeMapping mapping = options.choice("mapping", "intended", {"intended", "released"}) == "intended"
                                  ? TreeMapping::Intended
                                  : TreeMapping::Released;
  const TreeDistance distance = options.choice("decay_distance", "intended", {"intended", "released"}) == "intended"
                                    ? TreeDistance::Intended
                                    : TreeDistance::Released;
  const ApeSettings settings = read_ape_settings(options);
  return std::make_shared<ApeTree>(context.heads, context.head_width(), branching, shared_heads, mapping, distance,
                                   settings, gen);
}

}  // namespace posgrad
