// Positions (see positions.h).
#include "attention/positions.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "tensor/error.h"
#include "tensor/ops.h"

namespace posgrad {

Positions Positions::sequence(int64_t N, int64_t first) {
  if (N < 1) fail("Positions::sequence: need at least one token, got N = {}", N);
  if (first < 0) fail("Positions::sequence: the first index must be >= 0, got {}", first);
  Positions p = grid({N});
  p.first_ = first;
  return p;
}

Positions Positions::grid(std::vector<int64_t> structure) {
  if (structure.empty()) fail("Positions::grid: the structure needs at least one dimension");
  for (int64_t s : structure)
    if (s < 1) fail("Positions::grid: every structure size must be >= 1, got {}", fmt::join(structure, "x"));
  Positions p;
  p.kind_ = structure.size() == 1 ? Kind::Sequence : Kind::Grid;
  p.tokens_ = shape_numel(structure);
  p.structure_ = std::move(structure);
  return p;
}

Positions Positions::tree(const Tensor& heap, int64_t branching, int64_t max_depth) {
  if (!heap.defined() || heap.dtype() != DType::Int64 || (heap.dim() != 1 && heap.dim() != 2))
    fail("Positions::tree: heap positions must be int64 [N] or [B, N], got {}",
         heap.defined() ? heap.describe() : std::string("undefined"));
  if (branching < 2) fail("Positions::tree: branching factor must be >= 2, got {}", branching);
  if (max_depth < 1 || max_depth > 62) fail("Positions::tree: max_depth must be in 1..62, got {}", max_depth);
  Positions p;
  p.kind_ = Kind::Tree;
  p.heap_ = heap.to(kCPU).contiguous();
  p.tokens_ = heap.size(-1);
  p.branching_ = branching;
  p.max_depth_ = max_depth;
  for (int64_t v : p.heap_.to_vector<int64_t>()) {
    if (v < 0) fail("Positions::tree: heap positions must be >= 0 (0 = no position), got {}", v);
    const int64_t depth = static_cast<int64_t>(tree_word(v, branching).size());
    if (depth > max_depth)
      fail("Positions::tree: heap position {} lies at depth {}, deeper than max_depth {}", v, depth, max_depth);
  }
  return p;
}

std::string Positions::describe() const {
  switch (kind_) {
    case Kind::Sequence:
      return first_ ? fmt::format("sequence of {} from {}", tokens_, first_) : fmt::format("sequence of {}", tokens_);
    case Kind::Grid: return fmt::format("grid {}", fmt::join(structure_, "x"));
    case Kind::Tree: return fmt::format("tree positions {} (branching {})", heap_.describe(), branching_);
  }
  return "?";
}

const std::vector<int64_t>& Positions::structure() const {
  if (is_tree()) fail("Positions: trees have no grid structure ({})", describe());
  return structure_;
}

Tensor Positions::coordinates() const {
  const auto& S = structure();
  const int64_t n = dims();
  std::vector<int64_t> c(static_cast<size_t>(tokens_ * n));
  for (int64_t t = 0; t < tokens_; ++t) {
    int64_t rest = t;
    for (int64_t d = n - 1; d >= 0; --d) {
      c[static_cast<size_t>(t * n + d)] = rest % S[static_cast<size_t>(d)];
      rest /= S[static_cast<size_t>(d)];
    }
    c[static_cast<size_t>(t * n)] += first_;  // only sequences start later (n = 1)
  }
  return Tensor::from_vector(c, {tokens_, n});
}

Tensor Positions::flat_indices() const {
  structure();  // grids and sequences only
  return add(Tensor::arange(tokens_), Tensor::full({}, static_cast<double>(first_), kInt64));
}

PositionPair::PositionPair(const Positions& self)
    : queries_(self), keys_(self), cache_(self.cache_) {
  if (self.is_tree()) return;
  for (int64_t s : self.structure()) lo_.push_back(-(s - 1)), hi_.push_back(s - 1);
}

PositionPair::PositionPair(const Positions& queries, const Positions& keys)
    : queries_(queries), keys_(keys), cache_(std::make_shared<Positions::Cache>()) {
  if (queries.is_tree() != keys.is_tree() || queries.dims() != keys.dims() ||
      (queries.is_tree() && queries.branching() != keys.branching()))
    fail("PositionPair: queries at {} and keys at {} are not of one kind and dimension", queries.describe(),
         keys.describe());
  if (keys.is_tree()) return;
  const std::vector<int64_t> q0 = queries.coordinates().narrow(0, 0, 1).to_vector<int64_t>();
  const std::vector<int64_t> k0 = keys.coordinates().narrow(0, 0, 1).to_vector<int64_t>();
  for (int64_t d = 0; d < keys.dims(); ++d) {
    const size_t u = static_cast<size_t>(d);
    lo_.push_back(k0[u] - (q0[u] + queries.structure()[u] - 1));
    hi_.push_back(k0[u] + keys.structure()[u] - 1 - q0[u]);
  }
}

PositionPair PositionPair::memory(int64_t N, int64_t Nq) {
  if (Nq < 1 || Nq > N) fail("PositionPair::memory: need 1 <= Nq <= N queries, got Nq = {} for N = {}", Nq, N);
  if (Nq == N) return PositionPair(Positions::sequence(N));
  return PositionPair(Positions::sequence(Nq, N - Nq), Positions::sequence(N));
}

std::string PositionPair::describe() const {
  if (is_self()) return keys_.describe();
  return fmt::format("queries at {}, keys at {}", queries_.describe(), keys_.describe());
}

int64_t PositionPair::relative_size() const {
  keys_.structure();  // grids and sequences only
  int64_t r = 1;
  for (size_t d = 0; d < lo_.size(); ++d) r *= hi_[d] - lo_[d] + 1;
  return r;
}

Tensor PositionPair::relative_offsets() const {
  const int64_t n = dims(), R = relative_size();
  std::vector<int64_t> o(static_cast<size_t>(R * n));
  for (int64_t r = 0; r < R; ++r) {
    int64_t rest = r;
    for (int64_t d = n - 1; d >= 0; --d) {
      const size_t u = static_cast<size_t>(d);
      const int64_t span = hi_[u] - lo_[u] + 1;
      o[static_cast<size_t>(r * n + d)] = rest % span + lo_[u];
      rest /= span;
    }
  }
  return Tensor::from_vector(o, {R, n});
}

Tensor PositionPair::normalised_relative_grid(DType dtype) const {
  const int64_t n = dims(), R = relative_size();
  const std::vector<int64_t> o = relative_offsets().to_vector<int64_t>();
  std::vector<double> x(o.size());
  for (int64_t r = 0; r < R; ++r)
    for (int64_t d = 0; d < n; ++d) {
      const size_t u = static_cast<size_t>(d), e = static_cast<size_t>(r * n + d);
      const int64_t reach = std::max(-lo_[u], hi_[u]);
      x[e] = reach > 0 ? static_cast<double>(o[e]) / static_cast<double>(reach) : -1.0;
    }
  return Tensor::from_vector(x, {R, n}).to(dtype);
}

int64_t PositionPair::relative_index(const std::vector<int64_t>& offset) const {
  if (offset.size() != static_cast<size_t>(dims()) || is_tree())
    fail("PositionPair::relative_index: offset has {} dims, positions are {}", offset.size(), describe());
  int64_t index = 0;
  for (size_t d = 0; d < lo_.size(); ++d) {
    if (offset[d] < lo_[d] || offset[d] > hi_[d])
      fail("PositionPair::relative_index: offset {} outside the relative grid of {}", fmt::join(offset, ","), describe());
    index = index * (hi_[d] - lo_[d] + 1) + offset[d] - lo_[d];
  }
  return index;
}

const Tensor& PositionPair::dense_relative_index() const {
  if (cache_->dense_relative_index.defined()) return cache_->dense_relative_index;
  const int64_t n = dims(), Nq = queries_.tokens(), Nk = keys_.tokens();
  const std::vector<int64_t> cq = queries_.coordinates().to_vector<int64_t>(), ck = keys_.coordinates().to_vector<int64_t>();
  std::vector<int64_t> idx(static_cast<size_t>(Nq * Nk));
  for (int64_t i = 0; i < Nq; ++i)
    for (int64_t j = 0; j < Nk; ++j) {
      int64_t index = 0;
      for (int64_t d = 0; d < n; ++d) {
        const size_t u = static_cast<size_t>(d);
        const int64_t off = ck[static_cast<size_t>(j * n + d)] - cq[static_cast<size_t>(i * n + d)];
        index = index * (hi_[u] - lo_[u] + 1) + off - lo_[u];
      }
      idx[static_cast<size_t>(i * Nk + j)] = index;
    }
  cache_->dense_relative_index = Tensor::from_vector(idx, {Nq, Nk});
  return cache_->dense_relative_index;
}

const Tensor& PositionPair::dense_row_relative_index() const {
  if (cache_->dense_row_relative_index.defined()) return cache_->dense_row_relative_index;
  const int64_t Nq = queries_.tokens();
  const Tensor row_start = mul(Tensor::arange(Nq).reshape({Nq, 1}), Tensor::full({}, static_cast<double>(relative_size()), kInt64));
  cache_->dense_row_relative_index = add(dense_relative_index(), row_start);
  return cache_->dense_row_relative_index;
}

const Tensor& Positions::heap() const {
  if (!is_tree()) fail("Positions: only tree positions have heap indices ({})", describe());
  return heap_;
}

std::vector<int64_t> Positions::tree_word(int64_t heap, int64_t branching) {
  if (heap < 0) fail("Positions::tree_word: heap position must be >= 0, got {}", heap);
  if (branching < 2) fail("Positions::tree_word: branching factor must be >= 2, got {}", branching);
  std::vector<int64_t> word;
  for (int64_t node = heap - 1; node > 0; node = (node - 1) / branching) word.push_back((node - 1) % branching);
  return {word.rbegin(), word.rend()};
}

int64_t Positions::tree_distance(int64_t heap_a, int64_t heap_b, int64_t branching) {
  const auto u = tree_word(heap_a, branching), v = tree_word(heap_b, branching);
  size_t lcp = 0;
  while (lcp < u.size() && lcp < v.size() && u[lcp] == v[lcp]) ++lcp;
  return static_cast<int64_t>(u.size() + v.size() - 2 * lcp);
}

}  // namespace posgrad
