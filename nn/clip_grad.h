// Gradient clipping, like torch.nn.utils.clip_grad_norm_ / clip_grad_value_ (1.13): both change
// the parameters' gradients in place and skip parameters without a gradient.
//
// clip_grad_norm_: total = the norm_type-norm of all gradients together (the norm of the
// per-parameter norms); every gradient is multiplied by min(1, max_norm / (total + 1e-6)).
// The norm is accumulated in double. It returns `total` (before clipping), which is also the
// cheapest NaN/Inf detector a training loop has: when it is not finite the gradients are left
// untouched (PyTorch would multiply them by NaN or 0) and the caller should skip the step:
//
//     const double norm = clip_grad_norm_(params, 1.0);
//     if (!std::isfinite(norm)) { report; opt.zero_grad(); continue; }   // or step_if_finite()
//
// Deliberately not here: the adaptive-span per-tensor step clipping (an Adagrad option, see
// nn/adagrad.h), foreach variants.
#pragma once

#include <limits>
#include <vector>

#include "autograd/variable.h"

namespace posgrad {

inline constexpr double kInfNorm = std::numeric_limits<double>::infinity();

// The norm_type-norm (norm_type > 0, or kInfNorm for the max-abs norm) of all defined gradients
// of `params`, without changing them. 0 when no parameter has a gradient.
double grad_norm(const std::vector<Variable>& params, double norm_type = 2.0);

// Scales the gradients so that their total norm is at most max_norm; returns the total norm
// before clipping. Throws Error for max_norm < 0 or norm_type <= 0.
double clip_grad_norm_(const std::vector<Variable>& params, double max_norm, double norm_type = 2.0);

// Clamps every gradient element into [-clip_value, clip_value]. Throws for clip_value < 0.
void clip_grad_value_(const std::vector<Variable>& params, double clip_value);

}  // namespace posgrad
