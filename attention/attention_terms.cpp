// AttentionTerms and the combination of a layer's hooks (see attention_terms.h).
// Shapes: letters of shape_legend.h.
#include "attention/attention_terms.h"

#include <fmt/format.h>

#include "attention/attention_hook.h"
#include "autograd/functions.h"

namespace posgrad {

bool AttentionTerms::empty() const {
  return !key_bias.defined() && !uses_relative_tables() && !dense_modulation.defined();
}

bool AttentionTerms::uses_relative_tables() const {
  return query_table.defined() || bias.defined() || modulation.defined() || positional_modulation.defined() ||
         prob_mask.defined();
}

std::string AttentionTerms::fused_blocker() const {
  if (!dense_modulation.defined()) return "";
  return fmt::format("hook '{}' multiplies the logits by a factor that is not a table over the relative grid "
                     "(only the reference path applies it)",
                     dense_modulation_owner);
}

void merge_terms(AttentionTerms& all, const AttentionTerms& part, const std::string& owner) {
  auto add = [](Variable& acc, const Variable& t) {
    if (t.defined()) acc = acc.defined() ? acc + t : t;
  };
  auto multiply = [](Variable& acc, const Variable& t) {
    if (t.defined()) acc = acc.defined() ? acc * t : t;
  };
  add(all.key_bias, part.key_bias);
  add(all.query_table, part.query_table);
  add(all.bias, part.bias);
  multiply(all.modulation, part.modulation);
  multiply(all.positional_modulation, part.positional_modulation);
  if (part.prob_mask.defined()) {
    if (all.prob_mask.defined())
      fail("attention: hooks '{}' and '{}' both mask probabilities; two renormalisations in a row are not one "
           "mask table",
           all.prob_mask_owner, owner);
    all.prob_mask = part.prob_mask;
    all.prob_mask_owner = owner;
  }
  if (part.dense_modulation.defined()) {
    all.dense_modulation =
        all.dense_modulation.defined() ? mul(all.dense_modulation, part.dense_modulation) : part.dense_modulation;
    all.dense_modulation_owner = owner;
  }
}

AttentionTerms combine_attention_terms(const std::vector<std::shared_ptr<AttentionHook>>& hooks,
                                       const PositionPair& positions, DType dtype) {
  AttentionTerms all;
  for (const auto& hook : hooks) merge_terms(all, hook->attention_terms(positions, dtype), hook->summary());
  return all;
}

AttentionTerms detached(const AttentionTerms& terms) {
  AttentionTerms values = terms;
  for (Variable* t : {&values.key_bias, &values.query_table, &values.bias, &values.modulation,
                      &values.positional_modulation, &values.prob_mask})
    if (t->defined()) *t = t->detach();
  return values;
}

}  // namespace posgrad
