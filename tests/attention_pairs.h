// Reading one hook's tables (attention/attention_terms.h) on the dense query-key pairs, for tests
// that check a single term against its formula: a table [..., R] -> [..., N, N] with entry
// (i, j) = table[..., rel(i, j)], and q . query_table the same way.
#pragma once

#include "attention/attention_terms.h"

namespace posgrad::test {

// table [..., R] -> [..., Nq, N] at the relative entry of every (query i, key j).
inline Tensor on_pairs(const Variable& table, const PositionPair& pos) {
  const int64_t Nq = pos.queries().tokens(), N = pos.keys().tokens();
  Shape shape(table.value().shape().begin(), table.value().shape().end() - 1);
  shape.push_back(Nq);
  shape.push_back(N);
  return index_select(table.value(), -1, pos.dense_relative_index().reshape({Nq * N}).to(table.value().device()))
      .reshape(shape);
}

// The positional logits of `terms` for queries q [B, H, Nq, Dh]: q_i . query_table[h, rel(i, j)]
// + bias[h, rel(i, j)] -> [B, H, Nq, N] (no modulation).
inline Tensor positional_on_pairs(const AttentionTerms& terms, const Tensor& q, const PositionPair& pos) {
  const int64_t B = q.size(0), H = q.size(1), Nq = q.size(2), N = pos.keys().tokens();
  Tensor out = Tensor::zeros({B, H, Nq, N}, q.dtype(), q.device());
  if (terms.query_table.defined()) {
    const Tensor per_entry = matmul(q, terms.query_table.value().transpose(-1, -2));  // [B, H, Nq, R]
    const int64_t R = per_entry.size(3);
    const Tensor flat = pos.dense_row_relative_index().reshape({Nq * N}).to(q.device());
    out = add(out, index_select(per_entry.reshape({B, H, Nq * R}), 2, flat).reshape({B, H, Nq, N}));
  }
  if (terms.bias.defined()) out = add(out, on_pairs(terms.bias, pos));
  return out;
}

// The content bias key_bias[h] . k_j of `terms` -> [1|B, H, 1, N]; undefined without one.
inline Tensor content_bias_on_pairs(const AttentionTerms& terms, const Tensor& k) {
  if (!terms.key_bias.defined()) return Tensor();
  const Tensor u = terms.key_bias.value();  // [H, Dh]
  return matmul(u.reshape({1, u.size(0), 1, u.size(1)}), k.transpose(-1, -2));
}

// The logits of the formula in attention_terms.h for queries q and keys k [B, H, N, Dh] (no
// masks, no escape hatch): modulation * (q.k * scale + key_bias.k + positional_modulation *
// positional) -> [B, H, N, N].
inline Tensor logits_on_pairs(const AttentionTerms& terms, const Tensor& q, const Tensor& k, const Positions& pos,
                              double scale) {
  Tensor content = mul(matmul(q, k.transpose(-1, -2)), Tensor::full({}, scale, q.dtype()));
  if (terms.key_bias.defined()) content = add(content, content_bias_on_pairs(terms, k));
  Tensor positional = positional_on_pairs(terms, q, pos);
  if (terms.positional_modulation.defined()) positional = mul(positional, on_pairs(terms.positional_modulation, pos));
  Tensor logits = add(content, positional);
  if (terms.modulation.defined()) logits = mul(logits, on_pairs(terms.modulation, pos));
  return logits;
}

}  // namespace posgrad::test
