// The fused attention's formula for one (query, key) pair, written once for its three kernels:
// the CPU row kernels (fused_kernels_impl.h: V a vector of keys), the CPU tiled kernels
// (tiled_kernels.h: V a number) and the GPU kernels (gpu/fused_gpu_math.h: V a number, one GPU
// thread's). It is the reference's formula (attention_terms.h, kTableKinds) for head h, query i,
// key j and r = rel(i, j):
//
//   content    = scale q_i . k_j + key_bias[h] . k_j
//   positional = q_i . query_table[h, r] + bias[h, r]
//   s          = modulation[h, r] (content + positional_modulation[h, r] positional)
//   p          = softmax of s over the keys query i sees, weighed by a mask M (prob_mask[h, r], or
//                row_prob_mask at the key's window column) and renormalised with kMaskEpsilon
//
// A kernel reads a pair through an accessor `at`, written per shape of table (TableShape), never
// per kind:
//   at.content()            scale q_i . k_j + the key-vector tables' dots (HeadVector: key_bias)
//   at.query_dots(x)        x + q_i . T[h, r] of the query-vector table (EntryVectors: query_table)
//   at.entry(kind, absent)  an [H, R] table's value at the pair's entry r; `absent` (0 or 1)
//                           when the call has no such table
// and passes the gradients on per shape too: d content to q, k and the key biases, d positional
// to q and the query table, each [H, R] table's to that table. So a new kind of [H, R] table that
// acts on the logits (a factor on the content, say) is an entry of TableIndex, kTableNames and
// per_entry below and its terms in pair_logit and pair_gradients, and every kernel takes it. The
// masks act in each kernel's softmax (score_gradient, mask_gradient give the arithmetic); a second
// vector table would need the kernels' buffers.
// Deliberately not here: how a kernel walks keys and queries, the softmax's sums, tables' layouts.
// Plain C++17 with POSGRAD_HD (tensor/host_device.h): nvcc compiles it as CUDA C++17, g++ as C++20.
#pragma once

#include <type_traits>
#include <utility>

#include "tensor/host_device.h"  // POSGRAD_HD

namespace posgrad::fused_formula {

// The kinds of table, in the order of attention_terms.h's kTableKinds (fused_kernels.h checks
// the names and per_entry against it).
enum TableIndex : int { kKeyBias, kQueryTable, kBias, kPositionalModulation, kModulation, kProbMask, kRowProbMask, kTableCount };
inline constexpr const char* kTableNames[kTableCount] = {
    "key_bias", "query_table", "bias", "positional_modulation", "modulation", "prob_mask", "row_prob_mask"};
// Whether a kind is an [H, R] table of numbers per relative entry (TableShape::Entries).
POSGRAD_HD constexpr bool per_entry(int kind) {
  return kind == kBias || kind == kPositionalModulation || kind == kModulation || kind == kProbMask;
}

constexpr double kMaskEpsilon = 1e-8;  // the reference's renormalisation epsilon

// fn(std::integral_constant<int, kind>{}) for every kind in order, unrolled at compile time (so a
// kernel's loop over kinds indexes PairGradients::entry with constants and keeps it in registers).
template <class Fn, int... kinds>
POSGRAD_HD void for_each_kind(Fn&& fn, std::integer_sequence<int, kinds...>) {
  (fn(std::integral_constant<int, kinds>{}), ...);
}
template <class Fn>
POSGRAD_HD void for_each_kind(Fn&& fn) {
  for_each_kind(fn, std::make_integer_sequence<int, kTableCount>{});
}

// What a pair's backward needs of its forward: the content and the positional term before any
// factor (the kernels keep them or recompute them), and its logit.
template <class V>
struct PairLogit {
  V content, positional, s;
};

template <class V, class At>
POSGRAD_HD PairLogit<V> pair_logit(const At& at) {
  PairLogit<V> l;
  l.content = at.content();
  l.positional = at.query_dots(at.entry(kBias, 0));
  l.s = at.entry(kModulation, 1) * (l.content + at.entry(kPositionalModulation, 1) * l.positional);
  return l;
}

// d loss / d content, d loss / d positional (before any factor) and d loss / d table[h, r] of
// each per-entry kind that acts on the logits (0 for the others).
template <class V>
struct PairGradients {
  V content, positional, entry[kTableCount];
};

// The gradients of a pair from ds = d loss / d s (score_gradient) and its PairLogit.
template <class V, class At>
POSGRAD_HD PairGradients<V> pair_gradients(const At& at, const PairLogit<V>& l, V ds) {
  const V G = at.entry(kModulation, 1), P = at.entry(kPositionalModulation, 1);
  PairGradients<V> d{};
  d.content = ds * G;
  d.positional = d.content * P;
  d.entry[kBias] = d.positional;
  d.entry[kModulation] = ds * (l.content + P * l.positional);
  d.entry[kPositionalModulation] = d.content * l.positional;
  return d;
}

// d loss / d s of a pair from its probability e = exp(s - lse_i), dov = dout_i . v_j and
// D = dout_i . out_i: e (M (dov - D) - eps D), with eps = kMaskEpsilon under a mask; without one
// M = 1 and eps = 0, the softmax's e (dov - D).
template <class V, class S>
POSGRAD_HD V score_gradient(V e, V M, V dov, S D, S eps) {
  return e * (M * (dov - D) - eps * D);
}
// d loss / d M of a pair (prob_mask at its entry, or the row mask at its column).
template <class V, class S>
POSGRAD_HD V mask_gradient(V e, V dov, S D) {
  return e * (dov - D);
}

}  // namespace posgrad::fused_formula
