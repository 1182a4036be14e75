// fused_attention: the fused CPU attention op. One autograd op computes, for q, k, v
// [B, H, N, Dh] and the combined FusedTerms tables of a layer's hooks (fused_terms.h), the
// attention output [B, H, N, Dh] block by block (query rows, and runs of keys inside each
// query's key box), never materialising [B, H, N, N] scores or [B, H, N, R] tables. Memory is
// O(B H N Dh) plus the tables; keys outside the key box (span box, causal, adaptive-span trim)
// cost nothing. The backward recomputes the logits and returns dq, dk, dv and the gradient of
// every table, so the hooks' parameters (SIREN, sigma, adaptive-span c, u, v ...) train.
// float32 and float64, CPU only.
//
//   combine_fused_terms   asks every hook for its FusedTerms and combines them (additive terms
//                         add, modulations multiply); unsupported = a hook that cannot describe
//                         itself, named in the reason.
//   fused_attention       the op itself; FusedAttentionSpec holds what is not differentiable.
//
// Deliberately not here: the projections and head split (multi_head_attention.cpp), the
// kernels (fused_kernels.h), and other devices (an Error).
// Shapes: letters of shape_legend.h.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "attention/attention_hook.h"
#include "attention/fused/fused_terms.h"

namespace posgrad {

struct FusedAttentionSpec {
  Positions positions;
  std::optional<OffsetBox> box;  // key range (offsets key - query); none = every key
  Tensor key_padding;            // [B, N], non-zero = padded key; undefined = none
  double scale = 1.0;            // of q . k (1 / sqrt(Dh))
};

// Every hook's terms for `positions` in `dtype`, combined. `supported` is false (with a reason
// naming the first hook that cannot describe itself, or two probability masks) when the fused
// path cannot run these hooks.
FusedTerms combine_fused_terms(const std::vector<std::shared_ptr<AttentionHook>>& hooks, const Positions& positions,
                               DType dtype);

// q [B, H, Nq, Dh], k, v [B, H, N, Dh] -> [B, H, Nq, Dh]. The queries are the last Nq of the N
// tokens that `spec.positions` describes (Nq = N: self-attention; Nq < N: a segment attending
// over [cache; segment], whose cache rows are keys only). Tables as in fused_terms.h ([R] tables
// are shared by the heads). Differentiable in q, k, v and every defined table.
Variable fused_attention(const Variable& q, const Variable& k, const Variable& v, const FusedTerms& terms,
                         const FusedAttentionSpec& spec);

// The final probabilities of the same computation as dense [B, H, Nq, N] (no gradient; O(N^2)
// memory, for figures and tests only).
Tensor fused_attention_probs(const Tensor& q, const Tensor& k, const Tensor& v, const FusedTerms& terms,
                             const FusedAttentionSpec& spec);

}  // namespace posgrad
