// Module: the base class of every layer and model. A module owns named parameters (Variables
// with requires_grad, trained by optimizers), named buffers (tensors saved with the model but not
// trained, e.g. fixed tables) and named child modules. From those it derives everything generic:
// the recursive parameter list with dotted names ("blocks.0.attn.q_proj.weight"), train/eval
// mode, state_dict / load_state_dict, zero_grad, dtype and device moves, and a printable tree.
//
// Parameters never change identity: load_state_dict, to(DType) and to(Device) write into the
// same Variable (its mutable_value()), so optimizers and layers holding the Variable stay valid.
//
// Deliberately not here: the layers themselves (linear.h, ...), initialisation (init.h), saving
// to files (safetensors), optimizers. Module is not copyable (a copy would silently share
// parameters); hold modules by std::shared_ptr.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"

namespace posgrad {

// The saved state of a module: every parameter and buffer by dotted name, in registration order.
// The tensors SHARE storage with the module (like PyTorch); clone() them to keep a snapshot that
// later training must not change.
using StateDict = std::vector<std::pair<std::string, Tensor>>;

// What a non-strict load_state_dict skipped (strict loads throw instead).
struct LoadStateResult {
  std::vector<std::string> missing_keys;     // in the module, absent from the dict
  std::vector<std::string> unexpected_keys;  // in the dict, absent from the module
};

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The default forward for single-input modules (Sequential calls it). Modules whose forward
  // takes other arguments (attention masks, index tensors) define their own and leave this one,
  // which throws an Error naming the module type.
  virtual Variable forward(const Variable& x);
  Variable operator()(const Variable& x) { return forward(x); }

  // ------------------------------------------------------------ registration
  // Names must be non-empty and unique among this module's parameters, buffers and children.
  // Parameter and buffer names may not contain '.'; child names may ("blocks.0", a list).
  // `value` is used as is (not copied); it becomes a leaf Variable with requires_grad.
  Variable register_parameter(const std::string& name, const Tensor& value, bool requires_grad = true);
  // A buffer is saved in state_dict and moved by to(), but is not a parameter (no gradient, not
  // returned by parameters()). Returns the Variable (requires_grad false) that holds it.
  Variable register_buffer(const std::string& name, const Tensor& value);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

  // ------------------------------------------------------------ traversal
  // Recursive; this module's own entries first, then each child's in registration order (the
  // order of PyTorch's named_parameters). A Variable shared by several modules (weight tying)
  // appears once, under its first name.
  std::vector<Variable> parameters() const;
  std::vector<std::pair<std::string, Variable>> named_parameters() const;
  std::vector<std::pair<std::string, Variable>> named_buffers() const;
  // Direct children only, and all modules (this one first, named "") in pre-order.
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const { return children_; }
  std::vector<std::pair<std::string, const Module*>> named_modules() const;
  // The parameter with this dotted name; an Error listing the valid names when there is none.
  Variable parameter(const std::string& dotted_name) const;
  int64_t num_parameters() const;  // total elements of the (distinct) parameters

  // ------------------------------------------------------------ modes and gradients
  void train(bool on = true);  // recursive
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad();  // drops every parameter's gradient

  // ------------------------------------------------------------ state
  // Every parameter and buffer (including tied duplicates, under each name), registration order.
  StateDict state_dict() const;
  // Copies the dict's tensors into the module's parameters and buffers in place (converting
  // dtype and device to the module's). A shape mismatch is always an Error; with `strict`, a
  // missing or unexpected key is too. The message names every offending key (and both shapes);
  // nothing is modified when it throws.
  LoadStateResult load_state_dict(const StateDict& dict, bool strict = true);
  LoadStateResult load_state_dict(const std::map<std::string, Tensor>& dict, bool strict = true);
  // Rewrites a dict that an older version of this module wrote into today's names (renamed
  // parameters, buffers added since); load_state_dict calls it on the module it is called on, not
  // on the children. The default leaves the dict as it is.
  virtual void upgrade_state(StateDict& dict) const { (void)dict; }

  // ------------------------------------------------------------ dtype and device
  // Converts every floating-point parameter and buffer (and its gradient), recursively. Integer
  // buffers keep their dtype. Returns *this for chaining.
  Module& to(DType dtype);
  // Moves every parameter and buffer (and gradient). To a device this build lacks, the Error the
  // Tensor gives ("built without the CUDA backend"). Both conversions make every new tensor
  // before replacing any, so a failure leaves the module as it was.
  Module& to(Device device);

  // ------------------------------------------------------------ printing
  // The class name without namespace ("Linear"), from RTTI.
  std::string type_name() const;
  // One line of settings for printing, e.g. "in=4, out=8, bias=true". Override in layers.
  virtual std::string extra_repr() const { return ""; }
  // A PyTorch-style tree: "Sequential(\n  (0): Linear(in=4, out=8, bias=true)\n ...)".
  std::string to_string() const;

 protected:
  // Called for each module by train(); override to react to mode changes (rarely needed).
  virtual void on_train(bool /*on*/) {}

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name, bool allow_dots) const;
  // Visits every (dotted name, Variable) of parameters (and buffers when `buffers`), with
  // duplicates; `fn(name, var, is_buffer)`.
  template <typename Fn>
  void visit(const std::string& prefix, bool buffers, Fn&& fn) const;
  std::string tree_string(int indent) const;

  std::vector<std::pair<std::string, Variable>> params_;
  std::vector<std::pair<std::string, Variable>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

}  // namespace posgrad
