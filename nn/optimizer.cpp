// Optimizer base: parameter bookkeeping, the NaN/Inf guard, and state export/import.
// See optimizer.h.
#include "nn/optimizer.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "tensor/cpu/parallel.h"
#include "tensor/ops.h"

namespace posgrad {

namespace {

template <typename T>
bool any_nonfinite(const T* p, int64_t n) {
  // Chunks so large tensors are scanned by all threads; a chunk stops at its first bad value.
  constexpr int64_t kChunk = 16384;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<char> bad(static_cast<size_t>(chunks), 0);
  cpu::parallel_for(chunks, kChunk, [&](int64_t c) {
    const int64_t end = std::min(n, (c + 1) * kChunk);
    for (int64_t i = c * kChunk; i < end; ++i)
      if (!std::isfinite(p[i])) {
        bad[static_cast<size_t>(c)] = 1;
        return;
      }
  });
  return std::find(bad.begin(), bad.end(), 1) != bad.end();
}

std::string param_label(const Variable& p, size_t index) {
  return p.name().empty() ? fmt::format("parameter {} ({})", index, p.value().describe())
                          : fmt::format("parameter {} '{}' ({})", index, p.name(), p.value().describe());
}

}  // namespace

bool has_nonfinite(const Tensor& t) {
  return nonfinite_flags({t})[0] != 0;
}

std::vector<char> nonfinite_flags(const std::vector<Tensor>& tensors) {
  std::vector<char> flags(tensors.size(), 0);
  // Tensors on a device: sum(t * 0) is NaN exactly when t holds a NaN or an Inf, so one small
  // reduction per tensor stays on the device and all the sums come back in one copy.
  struct DeviceBatch {
    Device device;
    std::vector<size_t> index;  // positions in `tensors`
    std::vector<Tensor> sums;   // [1] float64 each, on `device`
  };
  std::vector<DeviceBatch> on_device;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (!t.defined() || !is_floating(t.dtype()) || t.numel() == 0) continue;
    if (t.device().is_cpu()) {
      const Tensor c = t.contiguous();
      flags[i] = dispatch_float(c.dtype(), "has_nonfinite",
                                [&]<typename T>() { return any_nonfinite(c.data<T>(), c.numel()); });
      continue;
    }
    auto batch = std::find_if(on_device.begin(), on_device.end(),
                              [&](const DeviceBatch& b) { return b.device == t.device(); });
    if (batch == on_device.end()) batch = on_device.insert(on_device.end(), DeviceBatch{t.device(), {}, {}});
    batch->index.push_back(i);
    batch->sums.push_back(sum(mul_scalar(t, 0.0)).reshape({1}).to(kFloat64));
  }
  for (const DeviceBatch& batch : on_device) {
    const std::vector<double> host = cat(batch.sums, 0).to(kCPU).to_vector<double>();  // one read-back
    for (size_t j = 0; j < batch.index.size(); ++j) flags[batch.index[j]] = std::isnan(host[j]) ? 1 : 0;
  }
  return flags;
}

namespace {
// True when any of the tensors `pick` returns for the defined parameters holds a NaN or Inf.
template <typename Pick>
bool any_nonfinite_of(const std::vector<Variable>& params, Pick pick) {
  std::vector<Tensor> tensors;
  for (const Variable& p : params)
    if (p.defined()) tensors.push_back(pick(p));
  const std::vector<char> flags = nonfinite_flags(tensors);
  return std::find(flags.begin(), flags.end(), 1) != flags.end();
}
}  // namespace

bool has_nonfinite_grad(const std::vector<Variable>& params) {
  return any_nonfinite_of(params, [](const Variable& p) { return p.grad(); });
}

bool has_nonfinite_value(const std::vector<Variable>& params) {
  return any_nonfinite_of(params, [](const Variable& p) { return p.value(); });
}

Optimizer::Optimizer(std::vector<Variable> params, double lr) : params_(std::move(params)), lr_(lr) {
  std::unordered_set<const VariableImpl*> seen;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Variable& p = params_[i];
    if (!p.defined()) fail("optimizer: parameter {} is undefined", i);
    if (!is_floating(p.dtype()))
      fail("optimizer: {} is not floating-point", param_label(p, i));
    if (!seen.insert(p.impl()).second)
      fail("optimizer: {} appears twice in the parameter list (it would be updated twice)",
           param_label(p, i));
  }
  set_lr(lr);
}

void Optimizer::set_lr(double lr) {
  if (!std::isfinite(lr) || lr < 0) fail("optimizer: invalid learning rate {}", lr);
  lr_ = lr;
}

std::vector<char> Optimizer::scan_nonfinite(bool values) const {
  // Gradients and values in one call, so a step on the GPU waits for the device once.
  std::vector<Tensor> tensors;
  for (const Variable& p : params_) tensors.push_back(p.grad());
  if (values)
    for (const Variable& p : params_) tensors.push_back(p.value());
  return nonfinite_flags(tensors);
}

void Optimizer::fail_on_nonfinite_value(const std::vector<char>& flags) const {
  const size_t n = params_.size();
  for (size_t i = 0; i < n && n + i < flags.size(); ++i)
    if (flags[n + i])
      fail("optimizer {}: {} holds NaN/Inf; refusing to update it (the model diverged before this "
           "step: lower the learning rate or enable gradient clipping)",
           kind(), param_label(params_[i], i));
}

void Optimizer::step() {
  if (check_finite_) {
    const std::vector<char> flags = scan_nonfinite(true);
    for (size_t i = 0; i < params_.size(); ++i)
      if (flags[i])
        fail("optimizer {}: the gradient of {} holds NaN/Inf; the update was not applied (use "
             "step_if_finite() to skip such steps)", kind(), param_label(params_[i], i));
    fail_on_nonfinite_value(flags);
  }
  NoGradGuard no_grad;
  update();
}

bool Optimizer::step_if_finite() {
  const std::vector<char> flags = scan_nonfinite(check_finite_);
  for (size_t i = 0; i < params_.size(); ++i)
    if (flags[i]) return false;
  fail_on_nonfinite_value(flags);
  NoGradGuard no_grad;
  update();
  return true;
}

void Optimizer::zero_grad() {
  for (Variable& p : params_) p.zero_grad();
}

std::string Optimizer::key(const char* buffer, size_t index) const {
  return fmt::format("{}.{}.{}", kind(), buffer, index);
}

double Optimizer::hyper(const OptimizerState& in, const char* name) {
  auto it = in.hyper.find(name);
  if (it == in.hyper.end()) fail("optimizer state ({}): hyperparameter '{}' is missing", in.kind, name);
  return it->second;
}

Tensor Optimizer::find_buffer(const OptimizerState& in, const std::string& key, size_t index,
                              bool scalar) const {
  for (const auto& [name, t] : in.tensors) {
    if (name != key) continue;
    used_keys_.push_back(key);
    if (!t.defined()) fail("optimizer state: tensor '{}' is undefined", key);
    if (scalar) {
      if (t.dtype() != kInt64 || t.dim() != 0)
        fail("optimizer state: '{}' must be an int64 scalar, got {}", key, t.describe());
      return t.clone();
    }
    const Tensor& p = params_[index].value();
    if (t.shape() != p.shape() || t.dtype() != p.dtype())
      fail("optimizer state: '{}' is {} but parameter {} is {}", key, t.describe(), index, p.describe());
    return t.to(p.device()).clone();
  }
  return Tensor();
}

OptimizerState Optimizer::state() const {
  OptimizerState out;
  out.kind = kind();
  out.hyper["lr"] = lr_;
  out.hyper["num_params"] = static_cast<double>(params_.size());
  export_state(out);
  return out;
}

void Optimizer::load_state(const OptimizerState& in) {
  if (in.kind != kind())
    fail("optimizer state: saved by a '{}' optimizer, cannot load it into '{}'", in.kind, kind());
  const double n = hyper(in, "num_params");
  if (n != static_cast<double>(params_.size()))
    fail("optimizer state ({}): saved for {} parameters, this optimizer has {}", in.kind, n,
         params_.size());
  std::unordered_set<std::string> names;
  for (const auto& [name, t] : in.tensors)
    if (!names.insert(name).second) fail("optimizer state ({}): tensor '{}' appears twice", in.kind, name);
  const double lr = hyper(in, "lr");
  if (!std::isfinite(lr) || lr < 0) fail("optimizer state ({}): invalid learning rate {}", in.kind, lr);

  // All or nothing: on any error the previous state is put back (subclasses replace their
  // buffer tensors instead of writing into them, so `backup` still holds the old ones).
  const OptimizerState backup = state();
  try {
    used_keys_.clear();
    lr_ = lr;
    import_state(in);
    // Anything the subclass did not ask for is an error: a silently ignored buffer would make
    // the resumed run differ.
    std::unordered_set<std::string> used(used_keys_.begin(), used_keys_.end());
    for (const auto& [name, t] : in.tensors)
      if (!used.count(name))
        fail("optimizer state ({}): unexpected tensor '{}' (wrong kind, option or parameter count?)",
             in.kind, name);
  } catch (...) {
    lr_ = backup.hyper.at("lr");
    import_state(backup);
    used_keys_.clear();
    throw;
  }
  used_keys_.clear();
}

}  // namespace posgrad
