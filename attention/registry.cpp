// The hook registry (see registry.h).
#include "attention/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <mutex>

namespace posgrad {

void register_builtin_hooks();  // builtin_hooks.cpp

namespace {

struct Entry {
  HookFactory factory;
  std::string description;
};

std::map<std::string, Entry>& storage() {
  static std::map<std::string, Entry> entries;
  return entries;
}

bool registering_builtins = false;

// The registry with the built-in hooks in it. Registering happens once, on first use; user hooks
// registered later replace built-ins of the same name.
std::map<std::string, Entry>& registry() {
  static std::once_flag builtins;
  if (!registering_builtins)
    std::call_once(builtins, [] {
      registering_builtins = true;
      register_builtin_hooks();
      registering_builtins = false;
    });
  return storage();
}

}  // namespace

// ------------------------------------------------------------------ HookOptions

std::string HookOptions::text(const std::string& key, const std::string& fallback) const {
  used_.insert(key);
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

namespace {

// `convert` (std::stod / std::stoll with a "characters used" out-parameter) must use the whole text.
template <typename T, typename Convert>
T parse_whole(const std::string& key, const std::string& s, const char* kind, Convert convert) {
  try {
    size_t used = 0;
    const T v = convert(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  fail("option '{}' must be {}, got '{}'", key, kind, s);
}

}  // namespace

double HookOptions::number(const std::string& key, double fallback) const {
  if (!has(key)) return used_.insert(key), fallback;
  return parse_whole<double>(key, text(key, ""), "a number", [](const std::string& s, size_t* n) { return std::stod(s, n); });
}

int64_t HookOptions::integer(const std::string& key, int64_t fallback) const {
  if (!has(key)) return used_.insert(key), fallback;
  return parse_whole<int64_t>(key, text(key, ""), "an integer",
                              [](const std::string& s, size_t* n) { return static_cast<int64_t>(std::stoll(s, n)); });
}

bool HookOptions::flag(const std::string& key, bool fallback) const {
  if (!has(key)) return used_.insert(key), fallback;
  const std::string s = text(key, "");
  if (s == "true" || s == "1" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "0" || s == "no" || s == "off") return false;
  fail("option '{}' must be true or false, got '{}'", key, s);
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
