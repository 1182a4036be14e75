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
  for (const TableKind& kind : kTableKinds)
    if (kind.shape != TableShape::HeadVector && (this->*kind.member).defined()) return true;
  return false;
}

std::string AttentionTerms::fused_blocker() const {
  if (!dense_modulation.defined()) return "";
  return fmt::format("hook '{}' multiplies the logits by a factor that is not a table over the relative grid "
                     "(only the reference path applies it)",
                     dense_modulation_owner);
}

void merge_terms(AttentionTerms& all, const AttentionTerms& part, const std::string& owner) {
  for (const TableKind& kind : kTableKinds) {
    const Variable& table = part.*kind.member;
    if (!table.defined()) continue;
    Variable& merged = all.*kind.member;
    const std::string name(kind.name);
    if (!merged.defined()) {
      merged = table;
      all.table_owner[name] = owner;
      continue;
    }
    switch (kind.merge) {
      case TableMerge::Add: merged = merged + table; break;
      case TableMerge::Multiply: merged = merged * table; break;
      case TableMerge::OneHook:
        fail("attention: hooks '{}' and '{}' both {} (table {}); only one hook may", all.table_owner[name], owner,
             kind.role, kind.name);
    }
  }
  if (all.prob_mask.defined() && all.row_prob_mask.defined())
    fail("attention: hooks '{}' and '{}' both mask probabilities (tables prob_mask and row_prob_mask); only one "
         "hook may (two renormalisations in a row are not one mask)",
         all.table_owner["prob_mask"], all.table_owner["row_prob_mask"]);
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
  for (const TableKind& kind : kTableKinds)
    if (Variable& t = values.*kind.member; t.defined()) t = t.detach();
  return values;
}

}  // namespace posgrad
