// Module (see module.h).
#include "nn/module.h"

#include <cxxabi.h>

#include <cstdlib>
#include <set>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>

namespace posgrad {

namespace {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::vector<std::string> q;
  for (const auto& n : names) q.push_back("'" + n + "'");
  return join(q, ", ");
}

}  // namespace

Variable Module::forward(const Variable& x) {
  fail("{}: this module has no single-input forward(Variable); call its own forward(...)", type_name());
}

// ---------------------------------------------------------------- registration

void Module::check_new_name(const std::string& name, bool allow_dots) const {
  if (name.empty()) fail("{}: a parameter, buffer or child name must not be empty", type_name());
  if (!allow_dots && name.find('.') != std::string::npos)
    fail("{}: parameter/buffer name '{}' must not contain '.' (dots separate module names)", type_name(), name);
  auto taken = [&name](const auto& list) {
    for (const auto& [n, _] : list)
      if (n == name) return true;
    return false;
  };
  if (taken(params_) || taken(buffers_) || taken(children_))
    fail("{}: the name '{}' is already registered", type_name(), name);
}

Variable Module::register_parameter(const std::string& name, const Tensor& value, bool requires_grad) {
  check_new_name(name, false);
  if (!value.defined()) fail("{}: parameter '{}' is an undefined tensor", type_name(), name);
  if (!is_floating(value.dtype()))
    fail("{}: parameter '{}' must be floating-point, got {}", type_name(), name, value.describe());
  Variable v(value, requires_grad);
  v.set_name(name);
  params_.emplace_back(name, v);
  return v;
}

Variable Module::register_buffer(const std::string& name, const Tensor& value) {
  check_new_name(name, false);
  if (!value.defined()) fail("{}: buffer '{}' is an undefined tensor", type_name(), name);
  Variable v(value, false);
  v.set_name(name);
  buffers_.emplace_back(name, v);
  return v;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, true);
  if (!module) fail("{}: child module '{}' is null", type_name(), name);
  if (module.get() == this) fail("{}: a module cannot be its own child ('{}')", type_name(), name);
  children_.emplace_back(name, std::move(module));
}

// ---------------------------------------------------------------- traversal

template <typename Fn>
void Module::visit(const std::string& prefix, bool buffers, Fn&& fn) const {
  for (const auto& [name, v] : params_) fn(prefix + name, v, false);
  if (buffers)
    for (const auto& [name, v] : buffers_) fn(prefix + name, v, true);
  for (const auto& [name, child] : children_) child->visit(prefix + name + ".", buffers, fn);
}

std::vector<std::pair<std::string, Variable>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Variable>> out;
  std::unordered_set<const VariableImpl*> seen;
  visit("", false, [&](const std::string& name, const Variable& v, bool) {
    if (seen.insert(v.impl()).second) out.emplace_back(name, v);
  });
  return out;
}

std::vector<Variable> Module::parameters() const {
  std::vector<Variable> out;
  for (auto& [_, v] : named_parameters()) out.push_back(v);
  return out;
}

std::vector<std::pair<std::string, Variable>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Variable>> out;
  std::unordered_set<const VariableImpl*> seen;
  visit("", true, [&](const std::string& name, const Variable& v, bool is_buffer) {
    if (is_buffer && seen.insert(v.impl()).second) out.emplace_back(name, v);
  });
  return out;
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out;
  // Pre-order with an explicit stack (children pushed in reverse to keep registration order).
  std::vector<std::pair<std::string, const Module*>> stack{{"", this}};
  std::unordered_set<const Module*> seen;
  while (!stack.empty()) {
    auto [name, m] = stack.back();
    stack.pop_back();
    if (!seen.insert(m).second) continue;
    out.emplace_back(name, m);
    for (auto it = m->children_.rbegin(); it != m->children_.rend(); ++it)
      stack.emplace_back(name.empty() ? it->first : name + "." + it->first, it->second.get());
  }
  return out;
}

Variable Module::parameter(const std::string& dotted_name) const {
  std::vector<std::string> names;
  for (const auto& [name, v] : named_parameters()) {
    if (name == dotted_name) return v;
    names.push_back(name);
  }
  fail("{}: no parameter named '{}' (parameters: {})", type_name(), dotted_name,
       names.empty() ? std::string("none") : join(names, ", "));
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const auto& [_, v] : named_parameters()) n += v.numel();
  return n;
}

// ---------------------------------------------------------------- modes and gradients

void Module::train(bool on) {
  training_ = on;
  on_train(on);
  for (auto& [_, child] : children_) child->train(on);
}

void Module::zero_grad() {
  visit("", false, [](const std::string&, const Variable& v, bool) { Variable(v).zero_grad(); });
}

// ---------------------------------------------------------------- state

StateDict Module::state_dict() const {
  StateDict out;
  visit("", true, [&](const std::string& name, const Variable& v, bool) { out.emplace_back(name, v.value()); });
  return out;
}

LoadStateResult Module::load_state_dict(const std::map<std::string, Tensor>& dict, bool strict) {
  return load_state_dict(StateDict(dict.begin(), dict.end()), strict);
}

LoadStateResult Module::load_state_dict(const StateDict& given_dict, bool strict) {
  StateDict dict = given_dict;
  upgrade_state(dict);
  std::unordered_map<std::string, const Tensor*> given;
  std::vector<std::string> duplicates;
  for (const auto& [name, t] : dict)
    if (!given.emplace(name, &t).second) duplicates.push_back(name);
  if (!duplicates.empty())
    fail("load_state_dict: the dict holds these keys more than once: {}", quoted_list(duplicates));

  // Check everything first, so a failing load leaves the module untouched.
  LoadStateResult result;
  std::vector<std::string> mismatches;
  std::vector<std::pair<Variable, const Tensor*>> assignments;
  std::set<std::string> own;
  visit("", true, [&](const std::string& name, const Variable& v, bool) {
    own.insert(name);
    auto it = given.find(name);
    if (it == given.end()) {
      result.missing_keys.push_back(name);
      return;
    }
    const Tensor& src = *it->second;
    if (!src.defined()) {
      mismatches.push_back(fmt::format("'{}': the dict's tensor is undefined", name));
    } else if (src.shape() != v.shape()) {
      mismatches.push_back(fmt::format("'{}': dict has shape {}, module expects {}", name,
                                       shape_str(src.shape()), shape_str(v.shape())));
    } else {
      assignments.emplace_back(v, &src);
    }
  });
  for (const auto& [name, _] : dict)
    if (!own.count(name)) result.unexpected_keys.push_back(name);

  std::vector<std::string> problems;
  if (!mismatches.empty()) problems.push_back("shape mismatch for " + join(mismatches, "; "));
  if (strict && !result.missing_keys.empty())
    problems.push_back("missing keys: " + quoted_list(result.missing_keys));
  if (strict && !result.unexpected_keys.empty())
    problems.push_back("unexpected keys: " + quoted_list(result.unexpected_keys));
  if (!problems.empty()) fail("load_state_dict into {}: {}", type_name(), join(problems, "; "));

  for (auto& [v, src] : assignments) {
    Tensor dst = Variable(v).mutable_value();
    dst.copy_(src->device() == dst.device() ? *src : src->to(dst.device()));
  }
  return result;
}

// ---------------------------------------------------------------- dtype and device

namespace {
// Replaces each distinct Variable's value (and gradient) by convert(value), converting all
// first so that an error (an unavailable device, out of memory) leaves everything unchanged.
template <typename Visit, typename Convert>
void convert_all(Visit&& visit_all, Convert&& convert) {
  struct Job {
    Variable v;
    Tensor value, grad;
  };
  std::vector<Job> jobs;
  std::unordered_set<const VariableImpl*> seen;
  visit_all([&](const std::string&, const Variable& v, bool) {
    if (!seen.insert(v.impl()).second) return;
    Tensor value = convert(v.value());
    if (!value.defined()) return;  // already as asked (or an integer buffer for a dtype change)
    Tensor grad = v.grad();
    if (grad.defined()) {
      Tensor converted = convert(grad);
      if (converted.defined()) grad = converted;
    }
    jobs.push_back({v, value, grad});
  });
  for (Job& j : jobs) {
    j.v.set_grad(Tensor());
    j.v.mutable_value() = j.value;
    if (j.grad.defined()) j.v.set_grad(j.grad);
  }
}
}  // namespace

Module& Module::to(DType dtype) {
  convert_all([this](auto&& fn) { visit("", true, fn); },
              [dtype](const Tensor& t) { return is_floating(t.dtype()) && t.dtype() != dtype ? t.to(dtype) : Tensor(); });
  return *this;
}

Module& Module::to(Device device) {
  convert_all([this](auto&& fn) { visit("", true, fn); },
              [device](const Tensor& t) { return t.device() != device ? t.to(device) : Tensor(); });
  return *this;
}

// ---------------------------------------------------------------- printing

std::string Module::type_name() const {
  const char* mangled = typeid(*this).name();
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = (status == 0 && demangled) ? demangled : mangled;
  std::free(demangled);
  const auto colon = name.rfind("::");
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

std::string Module::tree_string(int indent) const {
  std::string out = type_name() + "(" + extra_repr();
  if (children_.empty()) return out + ")";
  const std::string pad(static_cast<size_t>(indent + 2), ' ');
  out += "\n";
  for (const auto& [name, child] : children_) out += pad + "(" + name + "): " + child->tree_string(indent + 2) + "\n";
  return out + std::string(static_cast<size_t>(indent), ' ') + ")";
}

std::string Module::to_string() const { return tree_string(0); }

}  // namespace posgrad
