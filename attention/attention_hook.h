// AttentionHook: the one interface every positional scheme and span modulator implements. Each
// hook is a Module (it may own parameters) and overrides only the places where it acts; the
// defaults do nothing. An attention layer asks every hook, in this order, for one forward:
//
//   set_query_inputs(xq)       see the layer's query inputs                   dynamic span
//   rotate(q, k)               transform queries and keys independently       RoPE, APE
//   key_range()                offset box a query may see (intersected)       Gaussian span threshold, adaptive span
//   attention_terms()          score terms, modulations and the probability   Transformer-XL, SIREN, Shaw, ALiBi,
//                              mask, as small tables over the relative grid   T5, Gaussian span, APE decay,
//                              (attention_terms.h) or per query row           adaptive span, dynamic span
//
// The tables are the only way a hook contributes to the scores or the probabilities: the dense
// reference (reference_attention.h) and the fused op (fused/fused_attention.h) both read them, so
// a scheme is written once and runs on both. A factor that cannot be a table (the ape_tree decay,
// per example) goes into the one escape hatch, AttentionTerms::dense_modulation, which only the
// reference applies.
//
// Shapes: q, k [B, H, N, Dh]. Tables are in logit units: a scheme applies 1/sqrt(Dh) itself
// where its formula says so.
//
// Absolute schemes (sinusoidal, learned_absolute) act at none of these places: they are
// AbsoluteEncoding hooks, whose embed(x) the MODEL calls once on its token embeddings before the
// first layer (PosattnClassifier does). MultiHeadAttention refuses them with an error, so an
// absolute scheme is either applied or rejected, never silently ignored.
//
// Deliberately not here: the attention layer (multi_head_attention.h) and the registry that
// builds hooks by name (registry.h).
// Shapes: letters of shape_legend.h.
#pragma once

#include <optional>

#include "attention/attention_terms.h"
#include "attention/offset_box.h"
#include "nn/module.h"

namespace posgrad {

class AttentionHook : public Module {
 public:
  // The layer's query inputs xq [B, Nq, D] (before the projections), given before the other calls
  // of a forward: for hooks whose terms depend on the query tokens (the dynamic span).
  virtual void set_query_inputs(const Variable& queries_from) { (void)queries_from; }
  virtual void rotate(Variable& q, Variable& k, const PositionPair& positions) { (void)q, (void)k, (void)positions; }
  virtual std::optional<OffsetBox> key_range(const PositionPair& positions) const { (void)positions; return std::nullopt; }
  // What this hook adds to the scores and probabilities at `positions`, in `dtype`; the default
  // adds nothing.
  virtual AttentionTerms attention_terms(const PositionPair& positions, DType dtype) {
    (void)positions, (void)dtype;
    return {};
  }
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
