// AttentionPath and the rule that picks the implementation (see attention_path.h).
#include "attention/attention_path.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tensor/error.h"

namespace posgrad {

const std::vector<std::string>& attention_path_names() {
  static const std::vector<std::string> names{"auto", "reference", "fused"};
  return names;
}

AttentionPath attention_path_from_name(const std::string& name) {
  if (name == "auto") return AttentionPath::Auto;
  if (name == "reference") return AttentionPath::Reference;
  if (name == "fused") return AttentionPath::Fused;
  fail("unknown attention path '{}'; valid names are {}", name, fmt::join(attention_path_names(), ", "));
}

std::string attention_path_name(AttentionPath path) {
  switch (path) {
    case AttentionPath::Auto: return "auto";
    case AttentionPath::Reference: return "reference";
    case AttentionPath::Fused: return "fused";
  }
  return "auto";
}

std::string attention_path_help() {
  return "attention implementation: auto (fused when it can run on the CPU, else reference), reference (dense scores: any "
         "device, attention dropout, probabilities for figures), fused (the op over the positional tables that "
         "skips keys outside the span; an error when it cannot run)";
}

AttentionPath choose_attention_path(AttentionPath requested, const std::string& fused_blocker, std::string_view layer) {
  switch (requested) {
    case AttentionPath::Reference: return AttentionPath::Reference;
    case AttentionPath::Auto: return fused_blocker.empty() ? AttentionPath::Fused : AttentionPath::Reference;
    case AttentionPath::Fused:
      if (!fused_blocker.empty()) fail("{}: the fused attention path cannot run: {}", layer, fused_blocker);
      return AttentionPath::Fused;
  }
  return AttentionPath::Reference;
}

}  // namespace posgrad
