// The hook registry: positional schemes and span modulators are created by name from configs.
// An unknown name, or an option a hook does not read, is an error that lists the valid ones.
//
//   HookSpec spec{"gaussian_span", HookOptions{{"sigma", "0.3"}, {"threshold", "0.1"}}};
//   auto hook = make_hook(spec, HookContext{.width = 64, .heads = 8, .structure = {32, 32}}, gen);
//
// Built-in hooks are listed in builtin_hooks.cpp; user code can add its own with register_hook
// before building models. Deliberately not here: YAML parsing (apps/common turns config keys
// into HookSpecs) and any hook's behaviour.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "attention/attention_hook.h"
#include "tensor/random.h"

namespace posgrad {

// Options of one hook as text, read with typed getters that remember which keys were used.
class HookOptions {
 public:
  HookOptions() = default;
  explicit HookOptions(std::map<std::string, std::string> values) : values_(std::move(values)) {}
  // HookOptions{{"sigma", "0.3"}, {"threshold", "0.1"}}
  HookOptions(std::initializer_list<std::pair<const std::string, std::string>> values) : values_(values) {}

  double number(const std::string& key, double fallback) const;
  int64_t integer(const std::string& key, int64_t fallback) const;
  bool flag(const std::string& key, bool fallback) const;
  std::string text(const std::string& key, const std::string& fallback) const;
  // Throws if `key` is not one of `allowed`.
  std::string choice(const std::string& key, const std::string& fallback, const std::vector<std::string>& allowed) const;

  bool has(const std::string& key) const { return values_.count(key) != 0; }
  const std::map<std::string, std::string>& values() const { return values_; }
  // Error naming every given key that no getter read, and the keys that were read.
  void check_all_used(const std::string& hook) const;

 private:
  std::map<std::string, std::string> values_;
  mutable std::set<std::string> used_;
};

struct HookSpec {
  std::string name;
  HookOptions options;
};

// What a hook may need to know about the attention layer it joins.
struct HookContext {
  int64_t width = 0;                 // D
  int64_t heads = 1;                 // H
  std::vector<int64_t> structure;    // S per positional dim (empty for trees / unknown)
  int64_t layer = 0;                 // index of the transformer layer
  int64_t head_width() const { return heads > 0 ? width / heads : 0; }  // Dh
};

using HookFactory = std::function<std::shared_ptr<AttentionHook>(const HookContext&, const HookOptions&, Generator&)>;

// Registers (or replaces) a hook under `name`; `description` is one line for listings.
void register_hook(const std::string& name, HookFactory factory, const std::string& description);
// Builds the hook; errors list the registered names / unused options.
std::shared_ptr<AttentionHook> make_hook(const HookSpec& spec, const HookContext& context, Generator& gen);
std::vector<std::string> hook_names();          // sorted
std::string hook_description(const std::string& name);

}  // namespace posgrad
