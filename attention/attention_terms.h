// AttentionTerms: everything a layer's hooks add to one attention call, described once, as small
// per-head tables over the relative grid instead of as [B, H, Nq, N] tensors. Both
// implementations read the same tables: the reference (reference_attention.h) gathers them onto
// the dense scores with autograd primitives, the fused op (fused/fused_attention.h) evaluates
// them block by block. For head h, query i, key j and r = rel(i, j) (the relative-grid entry of
// key - query, Positions::relative_index):
//
//   content(i, j)    = q_i . k_j / sqrt(Dh)  +  key_bias[h] . k_j
//   positional(i, j) = q_i . query_table[h, r]  +  bias[h, r]
//   logit(i, j)      = modulation[h, r] * (content + positional_modulation[h, r] * positional)
//   p                = softmax over the keys in the key box (key_range(), causal) and not padded
//   p                = p * prob_mask[h, r] / (sum_j p * prob_mask[h, r] + 1e-8)
//   p                = p * row_prob_mask[b, h, i, c] / (sum_j p * row_prob_mask + 1e-8 sum_{j in support} p)
//
// row_prob_mask is the one table per query row (batch row b, head h, query i) instead of per
// relative entry: a window of W columns over the keys at offsets (key - query) -(W-1) .. 0 on a
// 1-D sequence, column c = W - 1 + key - query (offsets outside the window read 0). A row's
// softmax runs only over its support, the keys from its first to its last non-zero column (the
// others weigh 0 anyway; the dynamic span's per-token trimming): both paths leave the others out
// of the renormaliser's epsilon term too, and the fused path never visits them.
//
// Every member is optional (undefined = the term is absent, a modulation or mask of 1). Tables
// are [H, R] (or [R], shared by the heads), query_table [H, R, Dh], key_bias [H, Dh]; they are
// ordinary Variables, so their gradients reach the hook's parameters (SIREN weights, sigma, c)
// through the ops that built them. Terms of several hooks combine in the order of the formula:
// additive terms add, modulations multiply, and at most one hook may mask probabilities (two
// renormalisations in a row are not one table).
//
// The one escape hatch: `dense_modulation`, a factor on all logits that is not a table over the
// relative grid (the ape_tree decay: per example, from heap positions). Only the reference can
// apply it; fused_blocker() names it, so the fused path refuses such a layer (Auto takes the
// reference).
//
// Also here: the list of the kinds of table (kTableKinds), each with its step of the reference
// formula. Deliberately not here: the hooks' formulas (schemes/, spans/) and the two
// implementations (reference_attention.h, fused/).
// Shapes: letters of shape_legend.h.
#pragma once

#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attention/offset_box.h"
#include "attention/positions.h"
#include "autograd/functions.h"

namespace posgrad {

class AttentionHook;

struct AttentionTerms {
  Variable key_bias;               // [H, Dh]
  Variable query_table;            // [H, R, Dh]
  Variable bias;                   // [H, R] | [R]
  Variable modulation;             // [H, R] | [R]: multiplies all logits
  Variable positional_modulation;  // [H, R] | [R]: multiplies only the positional logits
  Variable prob_mask;              // [H, R] | [R]: post-softmax mask with renormalisation
  Variable row_prob_mask;          // [B, H, Nq, W]: the same per query row over a window of offsets
  // The escape hatch (reference only): multiplies all logits, broadcastable to [B, H, Nq, N].
  Tensor dense_modulation;
  std::string dense_modulation_owner;  // the hook that set it, for the fused path's error
  std::map<std::string, std::string> table_owner;  // kind name -> the hook that set it first (errors)

  bool empty() const;
  // Whether any member is a table over the relative grid (these need grid or sequence positions).
  bool uses_relative_tables() const;
  // Why the fused op cannot take these terms ("" when it can).
  std::string fused_blocker() const;
};

// ------------------------------------------------------------------ the kinds of table
// Everything generic about a table (merging two hooks' tables, detaching, the fused op's argument
// checks and packing, its column tables and per-thread gradients) iterates over kTableKinds. Only
// the formulas are written per kind: the reference's here (TableKind::reference) and the fused
// kernels' (CPU and GPU alike) in fused/fused_formula.h (TableIndex, pair_logit, pair_gradients).
// A new kind of [H, R] table acting on the logits is a member of AttentionTerms, an entry below,
// and its terms in fused_formula.h: two files (fused/fused_kernels.h checks the two lists agree).

enum class TableShape {
  HeadVector,    // [H, Dh]: per head, over the head's dims (not a table over the relative grid)
  Entries,       // [H, R] | [R]: a value per relative entry
  EntryVectors,  // [H, R, Dh]: a vector per relative entry
  RowWindow,     // [B, H, Nq, W]: a value per query row and offset -(W-1) .. 0 (1-D sequences)
};
// How the tables of several hooks combine.
enum class TableMerge { Add, Multiply, OneHook };
// Where the reference formula applies a kind: to the content and positional scores before the
// logits are formed from them, to the logits, or to the probabilities.
enum class TableStage { Scores, Logits, Probabilities };

// The reference's [B, H, Nq, N] quantities while its formula is applied, and the dense forms of a
// table that a kind's formula reads (defined in reference_attention.cpp).
struct DenseScores {
  Variable content;     // q . k scale, then the content terms
  Variable positional;  // undefined until a positional term adds to it
  Variable logits;      // content + positional, then the factors
  Variable probs;       // softmax over the keys a query sees
  // table [H, R] | [R] at each pair's relative entry (broadcastable to [B, H, Nq, N]).
  Variable at_pairs(const Variable& table) const;
  // A RowWindow table [B, H, Nq, W] at each pair (0 outside the window) [B, H, Nq, N], and its
  // rows' supports (1 from the first to the last non-zero column, else 0; no gradient).
  Variable at_rows(const Variable& table) const;
  Tensor row_supports(const Tensor& table) const;
  // q_i . table[h, rel(i, j)] for a table [H, R, Dh].
  Variable query_dots(const Variable& table) const;
  // table[h] . k_j for a table [H, Dh] ([B, H, 1, N]).
  Variable key_dots(const Variable& table) const;
  struct Inputs;  // q, k and the pairs' relative entries (reference_attention.cpp)
  const Inputs* inputs = nullptr;
};

struct TableKind {
  std::string_view name;
  Variable AttentionTerms::*member;
  TableShape shape;
  TableMerge merge;
  TableStage stage;
  std::string_view role;  // what it does, for errors: "hooks 'a' and 'b' both <role>"
  // Its step of the reference formula, given the merged table on the scores' device.
  void (*reference)(DenseScores& s, const Variable& table);
};

// sum + x for a sum that may not have started (undefined).
inline Variable plus(const Variable& sum, const Variable& x) { return sum.defined() ? sum + x : x; }

// In the order of the formula: content(i, j) = scale q_i . k_j + key_bias[h] . k_j;
// positional = (q_i . query_table[h, r] + bias[h, r]) positional_modulation[h, r];
// logit = (content + positional) modulation[h, r]; p = softmax, then the renormalised prob_mask.
inline constexpr TableKind kTableKinds[] = {
    {"key_bias", &AttentionTerms::key_bias, TableShape::HeadVector, TableMerge::Add, TableStage::Scores,
     "add u . k to the content", [](DenseScores& s, const Variable& t) { s.content = s.content + s.key_dots(t); }},
    {"query_table", &AttentionTerms::query_table, TableShape::EntryVectors, TableMerge::Add, TableStage::Scores,
     "add q . table[r] to the positional logits",
     [](DenseScores& s, const Variable& t) { s.positional = plus(s.positional, s.query_dots(t)); }},
    {"bias", &AttentionTerms::bias, TableShape::Entries, TableMerge::Add, TableStage::Scores,
     "add a bias to the positional logits",
     [](DenseScores& s, const Variable& t) { s.positional = plus(s.positional, s.at_pairs(t)); }},
    {"positional_modulation", &AttentionTerms::positional_modulation, TableShape::Entries, TableMerge::Multiply,
     TableStage::Scores, "scale the positional logits",
     [](DenseScores& s, const Variable& t) {
       if (s.positional.defined()) s.positional = s.positional * s.at_pairs(t);
     }},
    {"modulation", &AttentionTerms::modulation, TableShape::Entries, TableMerge::Multiply, TableStage::Logits,
     "scale the logits", [](DenseScores& s, const Variable& t) { s.logits = s.logits * s.at_pairs(t); }},
    {"prob_mask", &AttentionTerms::prob_mask, TableShape::Entries, TableMerge::OneHook, TableStage::Probabilities,
     "mask probabilities (two renormalisations in a row are not one mask table)",
     [](DenseScores& s, const Variable& t) {
       const Variable masked = s.probs * s.at_pairs(t);
       s.probs = masked / (sum(masked, {-1}, true) + 1e-8);
     }},
    {"row_prob_mask", &AttentionTerms::row_prob_mask, TableShape::RowWindow, TableMerge::OneHook,
     TableStage::Probabilities, "mask probabilities per query row (one row mask per layer)",
     [](DenseScores& s, const Variable& t) {
       // p = e / Z over all keys; the masked softmax over the support alone is
       // e m / (sum e m + 1e-8 sum_support e) = p m / (sum p m + 1e-8 sum_support p). A row
       // whose support holds no key gets a denominator of 1 instead of 0: its output is 0.
       const Variable support(s.row_supports(t.value()));  // also: no gradient outside it, as the fused op
       const Variable masked = s.probs * (s.at_rows(t) * support);
       const Variable in_support = s.probs * support;
       const Variable denominator = sum(masked, {-1}, true) + sum(in_support, {-1}, true) * 1e-8;
       s.probs = masked / masked_fill(denominator, eq(denominator.value(), Tensor::zeros_like(denominator.value())), 1.0);
     }},
};
inline constexpr size_t kTableKindCount = std::size(kTableKinds);

// The index of kind `name` in kTableKinds (a compile error when there is none).
consteval size_t table_kind(std::string_view name) {
  for (size_t i = 0; i < kTableKindCount; ++i)
    if (kTableKinds[i].name == name) return i;
  throw "no table kind of that name";
}

// What one attention call needs besides q, k, v and the terms; none of it is differentiable.
struct AttentionSpec {
  PositionPair positions{Positions()};  // of the Nq queries and the N keys
  std::optional<OffsetBox> box;  // key range (offsets key - query); none = every key
  Tensor key_padding;            // [B, N], non-zero = padded key; undefined = none
  double scale = 1.0;            // of q . k (1 / sqrt(Dh))
  // Causal by token index: query i (of the last Nq of N tokens) sees keys j <= i + N - Nq. The
  // causal mask of tree positions, which have no offsets (the reference only).
  bool causal_by_index = false;
};

// Adds `part` (the terms of `owner`) to `all` as each kind's TableMerge says; an Error naming both
// owners when both set a OneHook kind.
void merge_terms(AttentionTerms& all, const AttentionTerms& part, const std::string& owner);

// Every hook's terms for `positions` in `dtype`, merged as above.
AttentionTerms combine_attention_terms(const std::vector<std::shared_ptr<AttentionHook>>& hooks,
                                       const PositionPair& positions, DType dtype);

// The same terms with every table detached (values only, no autograd history kept alive).
AttentionTerms detached(const AttentionTerms& terms);

}  // namespace posgrad
