// Finite guard: see finite_guard.h.
#include "apps/common/finite_guard.h"

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "nn/optimizer.h"
#include "tensor/error.h"

namespace posgrad::apps {

namespace {

std::string keep_note(const std::filesystem::path& checkpoint) {
  return checkpoint.empty() ? "no checkpoint was written yet"
                            : fmt::format("the last good checkpoint is '{}'", checkpoint.string());
}

}  // namespace

void check_finite_loss(double loss, int64_t step, const std::filesystem::path& last_good_checkpoint) {
  if (!std::isfinite(loss))
    fail("training stopped: the loss is {} at step {} (the optimizer did not apply it); {}", loss, step,
         keep_note(last_good_checkpoint));
}

void check_finite_gradients(const Module& model, int64_t step, const std::filesystem::path& last_good_checkpoint) {
  const auto named = model.named_parameters();
  std::vector<Tensor> tensors;
  tensors.reserve(2 * named.size());
  for (const auto& [name, p] : named) tensors.push_back(p.grad());
  for (const auto& [name, p] : named) tensors.push_back(p.value());
  const std::vector<char> bad = nonfinite_flags(tensors);
  std::vector<std::string> grads, values;
  for (size_t i = 0; i < named.size(); ++i) {
    if (bad[i]) grads.push_back(named[i].first);
    if (bad[named.size() + i]) values.push_back(named[i].first);
  }
  if (grads.empty() && values.empty()) return;
  const auto list = [](const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 0; i < names.size() && i < 5; ++i) out += (i ? ", " : "") + names[i];
    return names.size() > 5 ? fmt::format("{} and {} more", out, names.size() - 5) : out;
  };
  fail("training stopped at step {}: {}{}{} (the optimizer did not apply this step); {}", step,
       grads.empty() ? "" : "NaN/Inf in the gradient of " + list(grads), grads.empty() || values.empty() ? "" : "; ",
       values.empty() ? "" : "NaN/Inf in the value of " + list(values), keep_note(last_good_checkpoint));
}

}  // namespace posgrad::apps
