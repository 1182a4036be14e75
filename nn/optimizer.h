// Optimizer: the base class of the parameter-update rules (SGD, Adam, AdamW, Adagrad), plus the
// non-finite checks that guard every update.
//
// An optimizer holds one flat list of parameters (one "param group" in PyTorch's terms) and
// updates their values in place (Variable::mutable_value(), under NoGradGuard), so a Module
// that shares those Variables sees the new values. A parameter whose gradient is undefined is
// skipped, exactly like PyTorch skips `p.grad is None`: its state is neither created nor
// advanced.
//
// NaN/Inf policy: an update is never applied silently from a non-finite gradient or onto a
// non-finite parameter. Before touching anything, `step()` scans every gradient and parameter;
// if one is NaN/Inf it throws posgrad::Error naming the parameter and changes nothing.
// Training loops that want to survive an occasional overflow use `step_if_finite()` instead:
//
//     if (!opt.step_if_finite()) {           // gradient had NaN/Inf: nothing was changed
//       log("step {}: non-finite gradient, update skipped", step);
//       ++skipped;                            // report it (metrics) and carry on
//     }
//     opt.zero_grad();
//
// (A non-finite *parameter* still throws there: skipping cannot repair a broken model.)
//
// State for exact resume: `state()` exports the per-parameter buffers as named tensors
// ("adam.m.3" = first moment of parameter 3, "adam.step.3" = its int64 step count, ...) and the
// scalar hyperparameters; `load_state()` restores both into an optimizer built over parameters
// of the same shapes. nn/checkpoint.h writes this to disk.
//
// Deliberately not here: parameter groups with different hyperparameters, sparse gradients,
// `maximize`, closures, LR schedules (nn/lr_schedule.h drives set_lr()), clipping
// (nn/clip_grad.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"

namespace posgrad {

// Everything an optimizer needs to continue exactly where it stopped.
struct OptimizerState {
  std::string kind;                                     // "sgd", "adam", "adamw", "adagrad"
  std::map<std::string, double> hyper;                  // "lr", "beta1", "weight_decay", ...
  std::vector<std::pair<std::string, Tensor>> tensors;  // "<kind>.<buffer>.<param index>"
};

// True when any element of `t` is NaN or +-Inf (false for int64 and undefined tensors).
bool has_nonfinite(const Tensor& t);
// has_nonfinite for each tensor. CPU tensors are scanned in place; tensors on a GPU are reduced
// there and their flags come back in one small copy per device (one synchronisation), never the
// tensors themselves.
std::vector<char> nonfinite_flags(const std::vector<Tensor>& tensors);
// True when any defined gradient among `params` holds a NaN or Inf.
bool has_nonfinite_grad(const std::vector<Variable>& params);
// True when any parameter value holds a NaN or Inf.
bool has_nonfinite_value(const std::vector<Variable>& params);

class Optimizer {
 public:
  // Throws when `params` holds an undefined or non-floating Variable, or the same Variable twice
  // (it would be updated twice per step).
  explicit Optimizer(std::vector<Variable> params, double lr);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient. Throws Error (and changes nothing) when a
  // gradient or a parameter is NaN/Inf, unless set_check_finite(false).
  void step();
  // Like step(), but a NaN/Inf gradient skips the whole update (parameters and state untouched)
  // and returns false. A NaN/Inf parameter still throws.
  [[nodiscard]] bool step_if_finite();
  // Drops every parameter's gradient (the next backward starts from zero).
  void zero_grad();

  double lr() const { return lr_; }
  void set_lr(double lr);
  // The finite check costs one read of every gradient and parameter per step; turn it off only
  // when a caller already checked (e.g. via clip_grad_norm_'s returned norm).
  void set_check_finite(bool check) { check_finite_ = check; }

  const std::vector<Variable>& params() const { return params_; }
  virtual const char* kind() const = 0;  // "sgd", "adam", ...

  // A snapshot: the tensors are copies, so later steps do not change it.
  OptimizerState state() const;
  // Restores hyperparameters and buffers. Throws Error naming the key when the kind differs, a
  // tensor is missing, unknown, or has the wrong shape or dtype for its parameter.
  void load_state(const OptimizerState& state);

 protected:
  // Applies the update to every parameter with a defined gradient (already checked finite).
  virtual void update() = 0;
  // Subclasses add their hyperparameters (besides "lr") and buffers.
  virtual void export_state(OptimizerState& out) const = 0;
  // Reads them back (after load_state() restored "lr"), using hyper() and find_buffer().
  virtual void import_state(const OptimizerState& in) = 0;

  // Helpers for subclasses.
  // Name of buffer `buffer` of parameter `index`: "<kind>.<buffer>.<index>".
  std::string key(const char* buffer, size_t index) const;
  // The hyperparameter `name` from `in`, or an Error naming it when absent.
  static double hyper(const OptimizerState& in, const char* name);
  // A copy of the tensor `key` from `in`, checked against parameter `index`'s shape and dtype
  // (or, when `scalar`, an int64 scalar []); undefined when `in` has no such key. Marks the key
  // as used: load_state() rejects tensors no subclass asked for.
  Tensor find_buffer(const OptimizerState& in, const std::string& key, size_t index,
                     bool scalar = false) const;

  std::vector<Variable> params_;
  double lr_;

 private:
  // NaN/Inf flags of every gradient, then (when `values`) of every parameter value.
  std::vector<char> scan_nonfinite(bool values) const;
  // Throws naming the first parameter whose value flag (after the gradient flags) is set.
  void fail_on_nonfinite_value(const std::vector<char>& flags) const;
  bool check_finite_ = true;
  mutable std::vector<std::string> used_keys_;  // filled by find_buffer() during load_state()
};

}  // namespace posgrad
