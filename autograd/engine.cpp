// The autograd engine and Variable basics: recording nodes, grad mode, and backward() — an
// iterative topological sort (explicit stack, so deep graphs cannot overflow the C++ stack)
// followed by one pass in reverse order that calls each node's closure and accumulates the
// gradients of its inputs. Leaves with a gradient-ready hook are counted in the sort (one per
// node that takes them) and their hook runs when the last of those nodes is done.
#include <unordered_map>
#include <unordered_set>

#include "autograd/variable.h"
#include "tensor/ops.h"

namespace posgrad {

namespace {
thread_local bool g_grad_mode = true;
}

bool grad_mode_enabled() { return g_grad_mode; }
NoGradGuard::NoGradGuard() : previous_(g_grad_mode) { g_grad_mode = false; }
NoGradGuard::~NoGradGuard() { g_grad_mode = previous_; }

Node::~Node() {
  // Destroying a long chain recursively (node -> input -> its node -> ...) would overflow the
  // stack; instead move sole-owned ancestors onto a local stack and release them one by one.
  std::vector<std::shared_ptr<Node>> pending;
  auto take = [&pending](std::vector<std::shared_ptr<VariableImpl>>& inputs) {
    for (auto& in : inputs)
      if (in && in.use_count() == 1 && in->grad_fn && in->grad_fn.use_count() == 1)
        pending.push_back(std::move(in->grad_fn));
    inputs.clear();
  };
  take(inputs);
  while (!pending.empty()) {
    std::shared_ptr<Node> node = std::move(pending.back());
    pending.pop_back();
    take(node->inputs);
  }
}

Variable::Variable(Tensor value, bool requires_grad) : impl_(std::make_shared<VariableImpl>()) {
  if (requires_grad && value.defined() && !is_floating(value.dtype()))
    fail("Variable: only floating-point variables can require gradients, got {}", value.describe());
  impl_->value = std::move(value);
  impl_->requires_grad = requires_grad;
}

const Tensor& Variable::value() const {
  if (!impl_) fail("Variable is undefined");
  return impl_->value;
}
Tensor& Variable::mutable_value() {
  if (!impl_) fail("Variable is undefined");
  return impl_->value;
}
const Tensor& Variable::grad() const {
  if (!impl_) fail("Variable is undefined");
  return impl_->grad;
}
void Variable::set_grad(const Tensor& grad) {
  if (!impl_) fail("Variable is undefined");
  if (grad.defined() && grad.shape() != impl_->value.shape())
    fail("set_grad: gradient {} does not match value {}", grad.describe(), impl_->value.describe());
  impl_->grad = grad;
}
void Variable::zero_grad() {
  if (impl_) impl_->grad = Tensor();
}
Variable& Variable::set_requires_grad(bool requires_grad) {
  if (!impl_) fail("Variable is undefined");
  if (!is_leaf() && !requires_grad) fail("set_requires_grad(false) on a non-leaf; use detach()");
  if (requires_grad && !is_floating(impl_->value.dtype()))
    fail("only floating-point variables can require gradients, got {}", impl_->value.describe());
  impl_->requires_grad = requires_grad;
  return *this;
}
void Variable::retain_grad() {
  if (!impl_) fail("Variable is undefined");
  impl_->retains_grad = true;
}
const std::shared_ptr<Node>& Variable::grad_fn() const {
  static const std::shared_ptr<Node> none;
  return impl_ ? impl_->grad_fn : none;
}
const std::string& Variable::name() const {
  static const std::string none;
  return impl_ ? impl_->name : none;
}
Variable& Variable::set_name(const std::string& name) {
  if (!impl_) fail("Variable is undefined");
  impl_->name = name;
  return *this;
}
void Variable::set_grad_ready_hook(std::function<void()> hook) {
  if (!impl_) fail("Variable is undefined");
  if (!is_leaf()) fail("set_grad_ready_hook on a non-leaf (only leaves' gradients are kept)");
  impl_->grad_ready_hook = std::move(hook);
}

Variable Variable::detach() const { return Variable(value(), false); }

Variable record(const char* name, Tensor value, const std::vector<Variable>& inputs,
                Node::BackwardFn backward) {
  bool any = false;
  if (grad_mode_enabled())
    for (const Variable& v : inputs) any = any || v.requires_grad();
  Variable out(std::move(value), false);
  if (!any) return out;
  auto node = std::make_shared<Node>();
  node->name = name;
  node->backward = std::move(backward);
  for (const Variable& v : inputs) {
    node->inputs.push_back(v.impl_ptr());
    node->needs.push_back(v.requires_grad());
  }
  out.impl()->grad_fn = std::move(node);
  out.impl()->requires_grad = true;
  return out;
}

void Variable::backward(const Tensor& grad_in, bool retain_graph) const {
  if (!impl_) fail("backward: Variable is undefined");
  if (!impl_->requires_grad)
    fail("backward: {} does not require a gradient (no input of its graph requires one)", value().describe());
  Tensor seed = grad_in;
  if (!seed.defined()) {
    if (value().numel() != 1)
      fail("backward: {} is not a scalar; pass the gradient of the output explicitly", value().describe());
    seed = Tensor::ones(value().shape(), value().dtype(), value().device());
  } else if (seed.shape() != value().shape() || seed.dtype() != value().dtype() ||
             seed.device() != value().device()) {
    fail("backward: gradient {} does not match output {}", seed.describe(), value().describe());
  }

  // 1. Topological order of the non-leaf variables reachable from this one (post-order DFS).
  std::vector<VariableImpl*> order;
  std::unordered_set<VariableImpl*> visited;
  std::vector<std::pair<VariableImpl*, size_t>> stack;
  if (impl_->grad_fn) stack.emplace_back(impl_.get(), 0), visited.insert(impl_.get());
  while (!stack.empty()) {
    auto& [v, next] = stack.back();
    const auto& inputs = v->grad_fn->inputs;
    if (next < inputs.size()) {
      VariableImpl* in = inputs[next++].get();
      if (in->grad_fn && in->requires_grad && visited.insert(in).second) stack.emplace_back(in, 0);
    } else {
      order.push_back(v);
      stack.pop_back();
    }
  }

  auto accumulate_leaf = [](VariableImpl* leaf, const Tensor& g) {
    if (!leaf->grad.defined()) {
      leaf->grad = g.clone();
    } else {
      add_(leaf->grad, g);
    }
  };

  if (!impl_->grad_fn) {  // backward on a leaf: its gradient is the seed itself
    accumulate_leaf(impl_.get(), seed);
    if (impl_->grad_ready_hook) impl_->grad_ready_hook();
    return;
  }

  // Gradient-ready hooks: how many nodes of the graph still have to pass a gradient to each
  // hooked leaf. A node passes its gradients when it runs, or passes none when no gradient
  // reached it; either way the count drops, and at zero the leaf's gradient is final.
  std::unordered_map<VariableImpl*, int> pending_for_hook;
  auto hooked_leaves_of = [](const Node& node, auto&& each) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      VariableImpl* in = node.inputs[i].get();
      if (node.needs[i] && !in->grad_fn && in->grad_ready_hook) each(in);
    }
  };
  for (VariableImpl* v : order) hooked_leaves_of(*v->grad_fn, [&](VariableImpl* leaf) { ++pending_for_hook[leaf]; });
  auto node_done = [&](const Node& node) {
    hooked_leaves_of(node, [&](VariableImpl* leaf) {
      if (--pending_for_hook[leaf] == 0) leaf->grad_ready_hook();
    });
  };

  // 2. Reverse order: each variable's gradient is complete before its node runs.
  std::unordered_map<VariableImpl*, Tensor> grads;
  grads[impl_.get()] = seed;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    VariableImpl* v = *it;
    auto found = grads.find(v);
    if (found == grads.end()) {
      node_done(*v->grad_fn);
      continue;
    }
    Tensor g = std::move(found->second);
    grads.erase(found);
    if (v->retains_grad) v->grad = v->grad.defined() ? add(v->grad, g) : g.clone();
    Node& node = *v->grad_fn;
    if (!node.backward)
      fail("backward: the graph through '{}' was already freed; call backward(grad, "
           "/*retain_graph=*/true) the first time to backpropagate twice", node.name);
    std::vector<Tensor> input_grads = node.backward(g, node.needs);
    if (input_grads.size() != node.inputs.size())
      fail("backward of '{}' returned {} gradients for {} inputs", node.name, input_grads.size(), node.inputs.size());
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      VariableImpl* in = node.inputs[i].get();
      Tensor& gi = input_grads[i];
      if (!node.needs[i] || !gi.defined()) continue;
      if (gi.shape() != in->value.shape())
        fail("backward of '{}': gradient {} for input {} has the wrong shape (expected {})", node.name,
             gi.describe(), i, in->value.describe());
      if (!in->grad_fn) {
        accumulate_leaf(in, gi);
      } else {
        Tensor& slot = grads[in];
        slot = slot.defined() ? add(slot, gi) : gi;
      }
    }
    node_done(node);
    if (!retain_graph) node.backward = nullptr;
  }
}

}  // namespace posgrad
