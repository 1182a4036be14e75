// The hook registry (see registry.h).
#include "attention/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>

#include "tensor/parse_text.h"

namespace posgrad {

// builtin_hooks.cpp: calls `add` once per built-in hook.
void register_builtin_hooks(const std::function<void(const std::string&, HookFactory, const std::string&)>& add);

namespace {

struct Entry {
  HookFactory factory;
  std::string description;
};

using Entries = std::map<std::string, Entry>;

// The registry, with the built-in hooks in it. A function-local static: C++ guarantees that its
// initialiser runs exactly once even when two threads make the first call together. User hooks
// registered later replace built-ins of the same name.
Entries& registry() {
  static Entries entries = [] {
    Entries builtins;
    register_builtin_hooks([&](const std::string& name, HookFactory factory, const std::string& description) {
      builtins[name] = Entry{std::move(factory), description};
    });
    return builtins;
  }();
  return entries;
}

}  // namespace

// ------------------------------------------------------------------ HookOptions

std::string HookOptions::text(const std::string& key, const std::string& fallback) const {
  used_.insert(key);
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

double HookOptions::number(const std::string& key, double fallback) const {
  if (!has(key)) return used_.insert(key), fallback;
  const std::string s = text(key, "");
  if (auto v = parse_double(s)) return *v;
  fail("option '{}' must be a number, got '{}'", key, s);
}

int64_t HookOptions::integer(const std::string& key, int64_t fallback) const {
  if (!has(key)) return used_.insert(key), fallback;
  const std::string s = text(key, "");
  if (auto v = parse_int64(s)) return *v;
  fail("option '{}' must be an integer, got '{}'", key, s);
}

bool HookOptions::flag(const std::string& key, bool fallback) const {
  if (!has(key)) return used_.insert(key), fallback;
  const std::string s = text(key, "");
  if (auto v = parse_bool(s)) return *v;
  fail("option '{}' must be true or false (also yes/no, on/off, 1/0), got '{}'", key, s);
}

std::string HookOptions::choice(const std::string& key, const std::string& fallback,
                                const std::vector<std::string>& allowed) const {
  const std::string s = text(key, fallback);
  for (const auto& a : allowed)
    if (a == s) return s;
  fail("option '{}' must be one of {}, got '{}'", key, fmt::join(allowed, ", "), s);
}

void HookOptions::check_all_used(const std::string& hook) const {
  std::vector<std::string> unknown;
  for (const auto& [key, value] : values_)
    if (!used_.count(key)) unknown.push_back(key);
  if (!unknown.empty())
    fail("{}: unknown option{} {}; valid options are {}", hook, unknown.size() > 1 ? "s" : "",
         fmt::join(unknown, ", "), fmt::join(used_, ", "));
}

// ------------------------------------------------------------------ registry

void register_hook(const std::string& name, HookFactory factory, const std::string& description) {
  if (name.empty() || !factory) fail("register_hook: a hook needs a name and a factory");
  registry()[name] = Entry{std::move(factory), description};
}

std::vector<std::string> hook_names() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : registry()) names.push_back(name);
  return names;
}

std::string hook_description(const std::string& name) {
  auto it = registry().find(name);
  if (it == registry().end()) fail("unknown attention hook '{}'; valid names are {}", name, fmt::join(hook_names(), ", "));
  return it->second.description;
}

std::shared_ptr<AttentionHook> make_hook(const HookSpec& spec, const HookContext& context, Generator& gen) {
  auto it = registry().find(spec.name);
  if (it == registry().end())
    fail("unknown attention hook '{}'; valid names are {}", spec.name, fmt::join(hook_names(), ", "));
  if (context.heads <= 0 || context.width <= 0 || context.width % context.heads != 0)
    fail("hook '{}': width {} must be a positive multiple of heads {}", spec.name, context.width, context.heads);
  std::shared_ptr<AttentionHook> hook;
  try {
    hook = it->second.factory(context, spec.options, gen);
  } catch (const Error& e) {
    fail("hook '{}': {}", spec.name, e.what());
  }
  spec.options.check_all_used(spec.name);
  return hook;
}

}  // namespace posgrad
