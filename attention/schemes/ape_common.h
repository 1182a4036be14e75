// What the three algebraic positional encodings (APE: ape, ape_grid, ape_tree) share: the options
// every variant reads, the orthogonal generators they own, applying per-token orthogonal maps to
// queries and keys, and multiplying logits by a decay factor.
//
// Every APE variant gives each token t an orthogonal map M_t per head and rotates
//   q~_t = M_t q_t,   k~_t = M_t k_t       (values untouched)
// so that q~_i . k~_j = q_i^T M_i^T M_j k_j depends on the two positions only through their
// relative path. Logits are then multiplied by decay^distance(i, j).
//
// Deliberately not here: how a variant builds its maps (ape_sequence.h, ape_grid.h, ape_tree.h)
// and the matrix exponential itself (nn/orthogonal.h).
// Shapes: letters of shape_legend.h.
#pragma once

#include <memory>
#include <string>

#include "attention/registry.h"
#include "nn/orthogonal.h"

namespace posgrad {

// Options shared by the APE variants:
//   init       rope_like (the paper's "w/ init", default) | near_identity ("w/o init") | normal
//   trainable  true (default): the generators get gradients; false freezes them
//   decay      logits are multiplied by decay^distance; 0.98 by default, 1 or 0 disables
struct ApeSettings {
  GeneratorInit init = GeneratorInit::RopeLike;
  bool trainable = true;
  double decay = 0.98;
  bool decays() const { return decay != 0.0 && decay != 1.0; }
  std::string describe() const;  // "init=rope_like, decay=0.98" (+ ", frozen")
};

ApeSettings read_ape_settings(const HookOptions& options);

// Registers the child "orthogonal" (generators [count, dim, dim]) on `owner`; freezes it unless
// `settings.trainable`.
std::shared_ptr<OrthogonalGenerators> add_ape_generators(Module& owner, const std::string& name, int64_t count,
                                                         int64_t dim, const ApeSettings& settings, Generator& gen);

// x [B, H, N, Dh] -> M_t x_t per token and head. maps: [H|1, N, Dh, Dh] (one map per token,
// shared by the batch) or [B, H|1, N, Dh, Dh] (per batch row). A size-1 head axis broadcasts.
Variable apply_token_maps(const Variable& x, const Variable& maps);

// decay^distance for integer distances, as a tensor of `shape` in `dtype` on `device`.
Tensor decay_factors(const std::vector<int64_t>& distances, const Shape& shape, double decay, DType dtype,
                     Device device);

// Checks q, k [B, H, N, Dh] against the hook's heads and head width (names the hook on error).
void check_ape_qk(const std::string& hook, const Variable& q, const Variable& k, int64_t heads, int64_t head_width);

}  // namespace posgrad
