// Replicas: see replicas.h.
#include "distributed/replicas.h"

#include <cstring>

#include <fmt/format.h>

namespace posgrad::distributed {

namespace {

// One line per parameter and buffer: "name dtype[shape]".
std::string model_layout(const Module& model) {
  std::string layout;
  for (const auto& [name, p] : model.named_parameters()) layout += fmt::format("parameter {} {}\n", name, p.value().describe());
  for (const auto& [name, b] : model.named_buffers()) layout += fmt::format("buffer {} {}\n", name, b.value().describe());
  return layout;
}

std::string first_difference(const std::string& mine, const std::string& root) {
  size_t a = 0, b = 0;
  while (a < mine.size() || b < root.size()) {
    const size_t ea = std::min(mine.find('\n', a), mine.size()), eb = std::min(root.find('\n', b), root.size());
    const std::string la = mine.substr(a, ea - a), lb = root.substr(b, eb - b);
    if (la != lb) return fmt::format("'{}' here, '{}' on rank 0", la.empty() ? "(nothing)" : la, lb.empty() ? "(nothing)" : lb);
    a = ea + 1;
    b = eb + 1;
  }
  return "";
}

void broadcast_value(Tensor& value, ProcessGroup& group) {
  if (value.is_contiguous()) {
    group.broadcast(value, 0);
    return;
  }
  Tensor copy = value.contiguous();
  group.broadcast(copy, 0);
  value.copy_(copy);
}

}  // namespace

void broadcast_module(Module& model, ProcessGroup& group) {
  if (group.size() == 1) return;
  const std::string mine = model_layout(model);
  std::string root = mine;
  group.broadcast(root, 0);
  // Every rank learns whether any rank differs, so all of them stop (none waits in a broadcast).
  std::vector<double> differs{mine == root ? 0.0 : 1.0};
  const std::string why = first_difference(mine, root);
  group.all_reduce_sum(differs);
  if (differs[0] > 0)
    fail("data parallel: the ranks built different models ({} of {} differ from rank 0{}); every rank must "
         "get the same settings",
         static_cast<int>(differs[0]), group.size(), why.empty() ? "" : fmt::format("; here: {}", why));
  NoGradGuard no_grad;
  for (auto& [name, p] : model.named_parameters()) broadcast_value(p.mutable_value(), group);
  for (auto& [name, b] : model.named_buffers()) broadcast_value(b.mutable_value(), group);
}

uint64_t broadcast_seed(uint64_t seed, ProcessGroup& group) {
  std::string bytes(sizeof(seed), '\0');
  std::memcpy(bytes.data(), &seed, sizeof(seed));
  group.broadcast(bytes, 0);
  std::memcpy(&seed, bytes.data(), sizeof(seed));
  return seed;
}

std::vector<double> mean_over_ranks(std::vector<double> values, ProcessGroup& group) {
  group.all_reduce_sum(values);
  for (double& v : values) v /= static_cast<double>(group.size());
  return values;
}

}  // namespace posgrad::distributed
