// AttentionHook: the one interface every positional scheme and span modulator implements. Each
// hook is a Module (it may own parameters) and overrides only the places where it acts; the
// defaults do nothing. MultiHeadAttention calls them in this order for one forward:
//
//   rotate(q, k)            transform queries and keys independently         RoPE, APE
//   key_range()             offset box a query may see (intersected)         Gaussian span threshold, adaptive span
//   score_terms(q, k)       additive logit terms (content and positional)    Transformer-XL, SIREN, Shaw, ALiBi
//   modulate(logits)        multiply logits                                  Gaussian span, APE decay
//   -- masks, softmax --
//   prob_mask()             multiply probabilities, then renormalise         adaptive span
//
// The fused path (attention/fused/) never builds [B, H, N, K] logits: it asks every hook for
// fused_terms(), the same score terms, modulation and mask as small tables over the relative
// grid (fused_terms.h), and runs rotate() and key_range() as above. A hook that does not
// override fused_terms() is refused by the fused path (with its name and what it lacks); the
// reference and window paths need nothing from it.
//
// Shapes: q, k [B, H, N, Dh]; logits [B, H, N, K] where K is the layout's slot count
// (score_layout.h). Content logits arrive already scaled by 1/sqrt(Dh); score terms are returned
// in logit units (a scheme applies 1/sqrt(Dh) itself where its formula says so).
//
// Absolute schemes (sinusoidal, learned_absolute) act at none of these places: they are
// AbsoluteEncoding hooks, whose embed(x) the MODEL calls once on its token embeddings before the
// first layer (PosattnClassifier does). MultiHeadAttention refuses them with an error, so an
// absolute scheme is either applied or rejected, never silently ignored.
//
// Deliberately not here: the pipeline itself (multi_head_attention.cpp) and the registry that
// builds hooks by name (registry.h).
// Shapes: letters of shape_legend.h.
#pragma once

#include <optional>

#include "attention/fused/fused_terms.h"
#include "attention/score_layout.h"
#include "nn/module.h"

namespace posgrad {

// Logits split into the content part (q.k and content biases) and the positional part, so a
// modulator can multiply all logits or only the positional ones. `positional` may be undefined.
struct Logits {
  Variable content;
  Variable positional;
  Variable total() const { return positional.defined() ? content + positional : content; }
};

class AttentionHook : public Module {
 public:
  virtual void rotate(Variable& q, Variable& k, const Positions& positions) { (void)q, (void)k, (void)positions; }
  virtual std::optional<OffsetBox> key_range(const Positions& positions) const { (void)positions; return std::nullopt; }
  virtual Logits score_terms(const Variable& q, const Variable& k, const ScoreLayout& layout) {
    (void)q, (void)k, (void)layout;
    return {};
  }
  virtual Logits modulate(Logits logits, const ScoreLayout& layout) { (void)layout; return logits; }
  // Multiplier broadcastable to the probabilities [B, H, N, K]; undefined = no mask.
  virtual Variable prob_mask(const ScoreLayout& layout) { (void)layout; return {}; }
  // score_terms, modulate and prob_mask of this hook as tables for the fused path (fused_terms.h),
  // in `dtype`. The default says the hook cannot describe itself, so the fused path refuses it.
  virtual FusedTerms fused_terms(const Positions& positions, DType dtype);
  // Extra training loss (e.g. the adaptive-span L1 penalty); undefined = none.
  virtual Variable regulariser() { return {}; }
  // Called after every optimizer step (e.g. clamping span parameters).
  virtual void after_optimizer_step() {}
  // One line for logs: the hook's name and its current state (e.g. sigma, spans).
  virtual std::string summary() const = 0;
};

// An absolute positional scheme: built by name like every hook, but applied by the model to its
// token embeddings (once, before the first layer), never inside attention.
class AbsoluteEncoding : public AttentionHook {
 public:
  // x [B, N, D] -> x + the embedding of each token's position [N, D].
  virtual Variable embed(const Variable& x, const Positions& positions) = 0;
};

// ---- model-level helpers for training loops (each hook once, in module pre-order)
std::vector<AttentionHook*> attention_hooks(const Module& model);
// Sum of every hook's regulariser (add it to the training loss only); undefined when none.
Variable attention_regulariser(const Module& model);
// Calls every hook's after_optimizer_step (e.g. clamps adaptive spans); call after opt.step().
void after_optimizer_step(const Module& model);

}  // namespace posgrad
