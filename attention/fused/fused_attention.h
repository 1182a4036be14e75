// fused_attention: the fused CPU attention op. One autograd op computes, for q, k, v
// [B, H, N, Dh] and the combined tables of a layer's hooks (attention/attention_terms.h), the
// attention output [B, H, N, Dh] block by block (query rows, and runs of keys inside each
// query's key box), never materialising [B, H, N, N] scores or [B, H, N, R] tables. Memory is
// O(B H N Dh) plus the tables; keys outside the key box (span box, causal, adaptive-span trim)
// cost nothing. The backward recomputes the logits and returns dq, dk, dv and the gradient of
// every table, so the hooks' parameters (SIREN, sigma, adaptive-span c, u, v ...) train.
// float32 and float64, on the CPU (fused_kernels.h) or on a GPU (gpu/fused_gpu.h). It computes the same numbers as reference_attention (its oracle in the tests);
// AttentionSpec holds what is not differentiable.
//
// Deliberately not here: the projections and head split (multi_head_attention.cpp), the
// kernels (fused_kernels.h, gpu/), and the escape hatch dense_modulation (an Error: reference only).
// Shapes: letters of shape_legend.h.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "attention/attention_terms.h"

namespace posgrad {

// q [B, H, Nq, Dh], k, v [B, H, N, Dh] -> [B, H, Nq, Dh], queries and keys where `spec.positions`
// places them (self-attention, a segment over a memory, or cross-attention). Tables as in
// attention/attention_terms.h ([R] tables are shared by the heads). Differentiable in q, k, v and
// every defined table.
Variable fused_attention(const Variable& q, const Variable& k, const Variable& v, const AttentionTerms& terms,
                         const AttentionSpec& spec);

// The GPU kernels' arithmetic (fused/gpu/fused_gpu_math.h), one GPU thread after another on the
// CPU, for CPU tensors, every row split into `parts` parts (each thread's slice, then the merges):
// how the tests check the GPU kernels on a machine without a GPU. Slow; not a path any layer takes.
Variable fused_attention_gpu_emulation(const Variable& q, const Variable& k, const Variable& v,
                                       const AttentionTerms& terms, const AttentionSpec& spec, int64_t parts = 3);

}  // namespace posgrad
