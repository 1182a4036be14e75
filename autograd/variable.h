// Variable: a tensor value that remembers how it was made, so gradients can flow back to it.
// Eager and define-by-run: every differentiable op (autograd/functions.h) records a Node holding
// its inputs and a backward closure; `backward()` (engine.cpp) walks the nodes in reverse
// topological order with an explicit stack. Variables share their state like shared_ptrs.
// A leaf can carry a gradient-ready hook: called during backward() once the leaf's gradient is
// final (every contribution of that backward accumulated), which lets data-parallel training
// send a gradient while the rest of the backward still runs (distributed/gradient_averager.h).
// This file deliberately holds no op formulas.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace posgrad {

class Variable;
struct VariableImpl;

// One recorded operation. `backward(grad_output, needs)` returns one gradient per input
// (undefined where needs[i] is false). The engine drops `backward` after use unless the graph is
// retained, which frees every tensor the closure saved.
struct Node {
  using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad, const std::vector<bool>& needs)>;
  std::string name;
  std::vector<std::shared_ptr<VariableImpl>> inputs;
  std::vector<bool> needs;  // needs[i]: input i requires a gradient
  BackwardFn backward;
  ~Node();  // tears long chains down iteratively (no recursion through deep graphs)
};

struct VariableImpl {
  Tensor value;
  Tensor grad;                     // accumulated gradient (leaves, and non-leaves with retain_grad)
  std::shared_ptr<Node> grad_fn;   // null for leaves
  bool requires_grad = false;
  bool retains_grad = false;
  std::string name;
  std::function<void()> grad_ready_hook;  // leaves only: see Variable::set_grad_ready_hook
};

class Variable {
 public:
  Variable() = default;
  // Implicit: a plain Tensor takes part in expressions as a constant.
  Variable(Tensor value, bool requires_grad = false);  // NOLINT(google-explicit-constructor)

  bool defined() const { return impl_ != nullptr && impl_->value.defined(); }
  const Tensor& value() const;
  Tensor& mutable_value();  // for optimizers and initialisers (in-place updates, no recording)
  const Tensor& grad() const;
  void set_grad(const Tensor& grad);
  void zero_grad();  // drops the gradient (the next backward starts from zero)
  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  Variable& set_requires_grad(bool requires_grad);
  bool is_leaf() const { return !impl_ || !impl_->grad_fn; }
  void retain_grad();  // keep this non-leaf's gradient after backward
  const std::shared_ptr<Node>& grad_fn() const;
  const std::string& name() const;
  Variable& set_name(const std::string& name);
  // On a leaf: `hook` runs inside every backward() that reaches this leaf, as soon as its
  // gradient is final for that backward (grad() then holds every contribution); an empty
  // function removes it. One hook per leaf; it must not start another backward.
  void set_grad_ready_hook(std::function<void()> hook);

  // Backpropagates from this variable. `grad` defaults to 1 for a one-element variable.
  // Without retain_graph the graph's saved tensors are freed and a second call is an Error.
  void backward(const Tensor& grad = Tensor(), bool retain_graph = false) const;
  Variable detach() const;  // same value, no history, no gradient

  const Shape& shape() const { return value().shape(); }
  int64_t dim() const { return value().dim(); }
  int64_t size(int64_t axis) const { return value().size(axis); }
  int64_t numel() const { return value().numel(); }
  DType dtype() const { return value().dtype(); }
  Device device() const { return value().device(); }
  double item() const { return value().item(); }

  VariableImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<VariableImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<VariableImpl> impl_;
};

// Gradient recording is on by default; NoGradGuard turns it off for its scope (evaluation,
// optimizer updates). Thread-local.
bool grad_mode_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Builds the output of a differentiable op: records a Node when grad mode is on and any input
// requires a gradient, otherwise returns a plain constant. Used by every op in functions.h.
Variable record(const char* name, Tensor value, const std::vector<Variable>& inputs,
                Node::BackwardFn backward);

}  // namespace posgrad
