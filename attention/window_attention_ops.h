// The two differentiable ops of the fast attention path: scores and the weighted sum over a
// KeyWindow (attention/key_window.h) instead of over all N keys. Shapes:
//
//   window_scores       q [B, H, N, Dh], k [B, H, N, Dh] -> scores [B, H, N, W]
//       scores[b, h, i, w] = q[b, h, i, :] . k[b, h, key(i, w), :]   (0 where the key is outside)
//   window_weighted_sum p [B, H, N, W],  v [B, H, N, Dv] -> out [B, H, N, Dv]
//       out[b, h, i, :] = sum_w p[b, h, i, w] * v[b, h, key(i, w), :]  (outside slots ignored)
//
// Both have their own backward and cost O(N * (W + block) * D): the CPU kernels run small GEMMs
// on blocks of consecutive queries against the contiguous run of keys they share
// (attention/window_kernels.cpp). Inputs may be non-contiguous (they are made contiguous);
// float32 is the fast path, float64 is exact for gradcheck.
//
// Deliberately not here: softmax, scaling, masking of outside slots before a softmax (use
// KeyWindow::blocked_mask), and a CUDA path (other devices are an Error for now).
// Shapes: letters of shape_legend.h.
#pragma once

#include "attention/key_window.h"
#include "autograd/variable.h"

namespace posgrad {

// q [B, H, N, Dh], k [B, H, N, Dh] -> [B, H, N, W]. Differentiable in q and k.
Variable window_scores(const Variable& q, const Variable& k, const KeyWindow& window);

// p [B, H, N, W], v [B, H, N, Dv] -> [B, H, N, Dv]. Differentiable in p and v; the gradient of
// p is 0 at slots whose key is outside the grid.
Variable window_weighted_sum(const Variable& p, const Variable& v, const KeyWindow& window);

}  // namespace posgrad
