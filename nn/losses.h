// Loss functions on Variables, with the semantics of torch.nn.functional (same names, same
// defaults), built from differentiable ops so that gradients flow to every floating input.
// Each reduces its per-element losses by `reduction`: Mean (default), Sum, or None (the
// per-element losses, shaped like the targets).
//
//   cross_entropy(logits [..., C], targets int64 [...])    class axis LAST (e.g. [B, C] or
//       [B, N, C] with targets [B, N]); ignore_index targets contribute nothing and Mean
//       divides by the number of non-ignored targets; label smoothing eps gives
//       (1 - eps) * nll + eps * mean over classes of -log p, as PyTorch defines it.
//   nll_loss(log_probs [..., C], targets int64 [...])       the same without the log_softmax.
//   binary_cross_entropy(probs, targets)                    logs clamped to >= -100 (PyTorch).
//   binary_cross_entropy_with_logits(logits, targets)       stable: max(x,0) - x t + log(1+e^-|x|).
//   mse_loss(input, target)                                 (input - target)^2.
//
// Targets out of range (other than ignore_index) and mismatched shapes are Errors naming them.
// Deviation from PyTorch, on purpose: a Mean over zero elements (all targets ignored, or an
// empty batch) is 0 with a zero gradient, not NaN.
//
// Deliberately not here: class weights, pos_weight, fused softmax+cross-entropy kernels.
// Shapes: letters of shape_legend.h.
#pragma once

#include <cstdint>
#include <string>

#include "autograd/variable.h"

namespace posgrad {

enum class Reduction { None, Mean, Sum };
// "none" | "mean" | "sum" (config values); anything else is an Error.
Reduction parse_reduction(const std::string& name);

Variable cross_entropy(const Variable& logits, const Tensor& targets, Reduction reduction = Reduction::Mean,
                       int64_t ignore_index = -100, double label_smoothing = 0.0);
Variable nll_loss(const Variable& log_probs, const Tensor& targets, Reduction reduction = Reduction::Mean,
                  int64_t ignore_index = -100);
Variable binary_cross_entropy(const Variable& probs, const Variable& targets, Reduction reduction = Reduction::Mean);
Variable binary_cross_entropy_with_logits(const Variable& logits, const Variable& targets,
                                          Reduction reduction = Reduction::Mean);
Variable mse_loss(const Variable& input, const Variable& target, Reduction reduction = Reduction::Mean);

}  // namespace posgrad
