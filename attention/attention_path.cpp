// AttentionPath and the rule that picks the implementation (see attention_path.h).
#include "attention/attention_path.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tensor/error.h"

namespace posgrad {

namespace {

// Every path with its name, in the order of model.attention's choices.
constexpr std::pair<AttentionPath, const char*> kPathNames[] = {
    {AttentionPath::Auto, "auto"}, {AttentionPath::Reference, "reference"}, {AttentionPath::Fused, "fused"}};

}  // namespace

const std::vector<std::string>& attention_path_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const auto& [path, name] : kPathNames) all.emplace_back(name);
    return all;
  }();
  return names;
}

AttentionPath attention_path_from_name(const std::string& name) {
  for (const auto& [path, path_name] : kPathNames)
    if (name == path_name) return path;
  fail("unknown attention path '{}'; valid names are {}", name, fmt::join(attention_path_names(), ", "));
}

std::string attention_path_name(AttentionPath path) {
  for (const auto& [p, name] : kPathNames)
    if (p == path) return name;
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
