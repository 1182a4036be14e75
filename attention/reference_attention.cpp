// reference_attention (see reference_attention.h).
// Shapes: letters of shape_legend.h.
#include "attention/reference_attention.h"

#include <limits>

#include "attention/attention_masks.h"
#include "autograd/functions.h"
#include "nn/dropout.h"

namespace posgrad {

namespace {

// A table on the scores' device: built by a hook on the CPU from constants (alibi, t5_bias) it is
// moved there; one built from parameters is already there (a differentiable move does not exist).
Variable on_device(const Variable& t, Device device) {
  if (!t.defined() || t.value().device() == device) return t;
  if (t.requires_grad())
    fail("reference attention: a table with gradient is on {} but the scores are on {}; move the hook with to()",
         t.value().device().str(), device.str());
  return Variable(t.value().to(device));
}

// table [..., R] -> [..., Nq, N] at the relative entries of the pairs.
Variable gather_pairs(const Variable& table, const Tensor& rel, int64_t Nq, int64_t N) {
  Shape shape(table.value().shape().begin(), table.value().shape().end() - 1);
  shape.push_back(Nq);
  shape.push_back(N);
  return reshape(index_select(table, -1, rel), shape);
}

// [H, R] | [R] -> broadcastable to [B, H, Nq, N].
Variable pair_table(const Variable& table, const Tensor& rel, int64_t Nq, int64_t N) {
  Variable t = gather_pairs(table, rel, Nq, N);  // [H, Nq, N] | [Nq, N]
  return t.dim() == 3 ? unsqueeze(t, 0) : t;
}

}  // namespace

struct DenseScores::Inputs {
  const Variable& q;   // [B, H, Nq, Dh]
  const Variable& k;   // [B, H, N, Dh]
  const PositionPair& positions;
  Tensor rel;          // [Nq * N] relative entry of each pair (undefined without relative tables)
};

Variable DenseScores::at_pairs(const Variable& table) const {
  return pair_table(table, inputs->rel, inputs->q.size(2), inputs->k.size(2));
}

// The window column c = W - 1 + (key - query) of every pair [Nq * N] (1-D), W where the pair lies
// outside the window.
static std::vector<int64_t> window_columns(const DenseScores::Inputs& in, int64_t W);

Variable DenseScores::at_rows(const Variable& table) const {
  const Variable& q = inputs->q;
  const int64_t B = q.size(0), H = q.size(1), Nq = q.size(2), N = inputs->k.size(2);
  if (table.dim() != 4 || table.size(0) != B || table.size(1) != H || table.size(2) != Nq)
    fail("attention: row_prob_mask must be [B, H, Nq, W] = [{}, {}, {}, W], got {}", B, H, Nq,
         table.value().describe());
  const int64_t W = table.size(3);
  std::vector<int64_t> flat = window_columns(*inputs, W);
  for (int64_t i = 0; i < Nq; ++i)
    for (int64_t j = 0; j < N; ++j) flat[static_cast<size_t>(i * N + j)] += i * (W + 1);
  const Variable zero(Tensor::zeros({B, H, Nq, 1}, table.dtype()).to(table.value().device()));
  const Variable padded = reshape(cat({table, zero}, 3), {B, H, Nq * (W + 1)});  // column W reads 0
  const Tensor index = Tensor::from_vector(flat, {Nq * N}).to(q.value().device());
  return reshape(index_select(padded, 2, index), {B, H, Nq, N});
}

Tensor DenseScores::row_supports(const Tensor& table) const {
  const int64_t B = table.size(0), H = table.size(1), Nq = table.size(2), W = table.size(3), N = inputs->k.size(2);
  const std::vector<double> values = table.to(kCPU).to_vector<double>();
  const std::vector<int64_t> columns = window_columns(*inputs, W);
  std::vector<double> support(static_cast<size_t>(B * H * Nq * N), 0.0);
  for (int64_t row = 0; row < B * H * Nq; ++row) {
    const double* m = values.data() + row * W;
    int64_t first = 0, last = W - 1;
    while (first < W && m[first] == 0.0) ++first;
    while (last >= first && m[last] == 0.0) --last;
    const int64_t i = row % Nq;
    for (int64_t j = 0; j < N; ++j) {
      const int64_t c = columns[static_cast<size_t>(i * N + j)];
      support[static_cast<size_t>(row * N + j)] = c >= first && c <= last ? 1.0 : 0.0;
    }
  }
  return Tensor::from_vector(support, {B, H, Nq, N}).to(table.dtype()).to(table.device());
}

static std::vector<int64_t> window_columns(const DenseScores::Inputs& in, int64_t W) {
  if (in.positions.is_tree() || in.positions.dims() != 1)
    fail("attention: a row mask (row_prob_mask) needs 1-D sequence positions, got {}", in.positions.describe());
  std::vector<int64_t> columns = in.rel.to(kCPU).to_vector<int64_t>();  // relative entry of key - query
  const int64_t lo = in.positions.relative_lo()[0];
  for (int64_t& c : columns) {
    c = W - 1 + c + lo;
    if (c < 0 || c >= W) c = W;
  }
  return columns;
}

Variable DenseScores::query_dots(const Variable& table) const {
  const Variable& q = inputs->q;
  const int64_t B = q.size(0), H = q.size(1), Nq = q.size(2), N = inputs->k.size(2), R = table.size(1);
  Variable per_entry = matmul(q, transpose(table, -1, -2));  // [B, H, Nq, R]
  const Tensor flat = inputs->positions.dense_row_relative_index().reshape({Nq * N}).to(q.value().device());
  return reshape(index_select(reshape(per_entry, {B, H, Nq * R}), 2, flat), {B, H, Nq, N});
}

Variable DenseScores::key_dots(const Variable& u) const {  // u [H, Dh]
  return matmul(reshape(u, {1, u.size(0), 1, u.size(1)}), transpose(inputs->k, -1, -2));  // [B, H, 1, N]
}

Variable reference_attention(const Variable& q, const Variable& k, const Variable& v, const AttentionTerms& terms,
                             const AttentionSpec& spec, Tensor* probs_out, const ProbabilityDropout& dropout) {
  if (q.dim() != 4 || k.dim() != 4 || k.shape() != v.shape() || q.size(0) != k.size(0) || q.size(1) != k.size(1) ||
      q.size(3) != k.size(3))
    fail("reference attention: k, v must be [B, H, N, Dh] and q [B, H, Nq, Dh], got q {}, k {}, v {}",
         q.value().describe(), k.value().describe(), v.value().describe());
  const PositionPair& pos = spec.positions;
  const int64_t B = q.size(0), Nq = q.size(2), N = k.size(2);
  if (pos.keys().tokens() != N || pos.queries().tokens() != Nq)
    fail("attention: {} queries and {} keys, but the positions describe {}", Nq, N, pos.describe());
  const Device device = q.value().device();
  const bool relative = terms.uses_relative_tables() || spec.box.has_value();
  if (relative && pos.is_tree())
    fail("attention: relative tables and key ranges need grid or sequence positions, not {}", pos.describe());
  const Tensor rel = relative ? pos.dense_relative_index().reshape({Nq * N}).to(device) : Tensor();

  // The formula, kind by kind in the order of kTableKinds (attention_terms.h), stage by stage.
  const DenseScores::Inputs inputs{q, k, pos, rel};
  DenseScores s;
  s.inputs = &inputs;
  auto apply = [&](TableStage stage) {
    for (const TableKind& kind : kTableKinds)
      if (kind.stage == stage && (terms.*kind.member).defined())
        kind.reference(s, on_device(terms.*kind.member, device));
  };
  s.content = matmul(q, transpose(k, -1, -2)) * spec.scale;  // [B, H, Nq, N]
  apply(TableStage::Scores);
  s.logits = s.positional.defined() ? s.content + s.positional : s.content;
  apply(TableStage::Logits);
  Variable& logits = s.logits;
  if (terms.dense_modulation.defined()) logits = logits * Variable(terms.dense_modulation.to(device));

  // Blocked keys: outside the key box (by relative entry) or padded.
  Tensor blocked;
  if (spec.box) {
    const OffsetBox box = spec.box->intersect(OffsetBox::full(pos));
    const int64_t R = pos.relative_size(), n = pos.dims();
    const std::vector<int64_t> offsets = pos.relative_offsets().to_vector<int64_t>();  // [R, n]
    std::vector<double> outside(static_cast<size_t>(R));
    for (int64_t r = 0; r < R; ++r) {
      const std::vector<int64_t> o(offsets.begin() + r * n, offsets.begin() + (r + 1) * n);
      outside[static_cast<size_t>(r)] = box.contains(o) ? 0.0 : 1.0;
    }
    blocked = index_select(Tensor::from_vector(outside, {R}).to(logits.dtype()).to(device), 0, rel).reshape({Nq, N});
  }
  if (spec.causal_by_index) {  // query i is token i + N - Nq: keys after it are blocked
    std::vector<double> after(static_cast<size_t>(Nq * N));
    for (int64_t i = 0; i < Nq; ++i)
      for (int64_t j = i + N - Nq + 1; j < N; ++j) after[static_cast<size_t>(i * N + j)] = 1.0;
    blocked = blocked_union(blocked, Tensor::from_vector(after, {Nq, N}).to(logits.dtype()).to(device));
  }
  if (spec.key_padding.defined()) {
    if (spec.key_padding.dim() != 2 || spec.key_padding.size(0) != B || spec.key_padding.size(1) != N)
      fail("attention: key_padding must be [B, N] = [{}, {}], got {}", B, N, spec.key_padding.describe());
    blocked = blocked_union(blocked, mask_indicator(spec.key_padding.to(device), logits.dtype()).reshape({B, 1, 1, N}));
  }
  if (blocked.defined()) logits = masked_fill(logits, blocked, -std::numeric_limits<double>::infinity());
  s.probs = softmax(logits, -1);
  apply(TableStage::Probabilities);
  Variable probs = s.probs;
  if (probs_out) *probs_out = probs.value();
  if (dropout.rate > 0.0 && dropout.training) {
    if (!dropout.gen) fail("reference attention: dropout on the probabilities needs a generator");
    probs = posgrad::dropout(probs, dropout.rate, true, *dropout.gen);
  }
  return matmul(probs, v);
}

}  // namespace posgrad
