// Config: see config.h. Parsing of scalars (from YAML and from overrides), error messages with
// nearby keys, and output as YAML and JSON.
#include "apps/common/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "tensor/error.h"

namespace posgrad::apps {

namespace {

// ------------------------------------------------------------------ small string helpers

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_quoted(std::string_view s) {
  return s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front();
}

std::string unquote(std::string_view s) {
  s = trim(s);
  if (is_quoted(s)) return std::string(s.substr(1, s.size() - 2));
  return std::string(s);
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

// ------------------------------------------------------------------ scalar parsing

std::optional<int64_t> parse_int(std::string_view s) {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  size_t digits_from = (s.front() == '-') ? 1 : 0;
  if (digits_from == s.size()) return std::nullopt;
  for (size_t i = digits_from; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// Accepts what YAML and people write for floats: 0.1, .5, 3, 1e-3, 2.5E+4, inf, .inf, -.inf,
// nan, .nan (any case for inf/nan).
std::optional<double> parse_double(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  bool negative = false;
  if (s.front() == '+' || s.front() == '-') {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  const std::string l = lower(s);
  if (l == "inf" || l == ".inf" || l == "infinity")
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  if (l == "nan" || l == ".nan") return std::numeric_limits<double>::quiet_NaN();
  // Only digits, one '.', and an exponent: rejects hex floats and other strtod extras.
  bool digit = false;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c))) digit = true;
    else if (c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-') return std::nullopt;
  }
  if (!digit) return std::nullopt;
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return negative ? -v : v;
}

// Overrides accept the usual spellings of a truth value.
std::optional<bool> parse_bool_loose(std::string_view s) {
  const std::string l = lower(trim(s));
  if (l == "true" || l == "1" || l == "yes" || l == "on" || l == "y") return true;
  if (l == "false" || l == "0" || l == "no" || l == "off" || l == "n") return false;
  return std::nullopt;
}

// YAML files: only true/false count as booleans (so `country: no` stays a string).
std::optional<bool> parse_bool_strict(std::string_view s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

bool looks_null(std::string_view s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

// The value of a plain (unquoted) YAML scalar: bool, int, float or else string.
ConfigValue infer_plain(const std::string& s) {
  if (auto b = parse_bool_strict(s)) return *b;
  if (auto i = parse_int(s)) return *i;
  if (auto d = parse_double(s)) return *d;
  return s;
}

// A string that a YAML reader would take for something else must be quoted on output.
bool needs_quotes(const std::string& s) {
  if (looks_null(s)) return true;
  return !std::holds_alternative<std::string>(infer_plain(s)) || s != std::string(trim(s));
}

std::string format_double(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string format_string_item(const std::string& s) {
  if (needs_quotes(s) || s.find_first_of(",[]\"'") != std::string::npos) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  }
  return s;
}

template <typename T, typename F>
std::string format_list(const std::vector<T>& items, F&& format_one) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += format_one(items[i]);
  }
  return out + "]";
}

std::string format_value(const ConfigValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, int64_t>) return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>) return format_double(x);
        else if constexpr (std::is_same_v<T, std::string>) return x;
        else if constexpr (std::is_same_v<T, std::vector<bool>>)
          return format_list(x, [](bool b) -> std::string { return b ? "true" : "false"; });
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          return format_list(x, [](int64_t i) { return std::to_string(i); });
        else if constexpr (std::is_same_v<T, std::vector<double>>)
          return format_list(x, [](double d) { return format_double(d); });
        else
          return format_list(x, [](const std::string& s) { return format_string_item(s); });
      },
      v);
}

ConfigType type_of_value(const ConfigValue& v) { return static_cast<ConfigType>(v.index()); }

// Splits a list override ("[1, 2, 3]", "1,2,3", "['a,b', c]") into trimmed items; commas inside
// quotes do not split. "[]" and "" give no items.
std::optional<std::vector<std::string>> split_list(std::string_view text) {
  std::string_view s = trim(text);
  if (!s.empty() && s.front() == '[') {
    if (s.back() != ']') return std::nullopt;
    s = trim(s.substr(1, s.size() - 2));
  }
  std::vector<std::string> items;
  if (s.empty()) return items;
  std::string current;
  char quote = 0;
  for (char c : s) {
    if (quote) {
      if (c == quote) quote = 0;
      current += c;
    } else if (c == '"' || c == '\'') {
      quote = c;
      current += c;
    } else if (c == ',') {
      items.emplace_back(trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (quote) return std::nullopt;
  items.emplace_back(trim(current));
  return items;
}

// Parses `text` to the type `type`; returns nullopt (and the offending part in `bad_item`) on
// failure.
std::optional<ConfigValue> parse_as(ConfigType type, std::string_view text, std::string& bad_item) {
  auto parse_items = [&](auto parse_one) -> std::optional<ConfigValue> {
    auto items = split_list(text);
    if (!items) {
      bad_item = std::string(text);
      return std::nullopt;
    }
    using Item = std::decay_t<decltype(*parse_one(std::string_view{}))>;
    std::vector<Item> out;
    for (const std::string& item : *items) {
      auto v = parse_one(item);
      if (!v) {
        bad_item = item;
        return std::nullopt;
      }
      out.push_back(*v);
    }
    return ConfigValue(std::move(out));
  };
  bad_item = std::string(text);
  switch (type) {
    case ConfigType::Bool:
      if (auto v = parse_bool_loose(text)) return ConfigValue(*v);
      return std::nullopt;
    case ConfigType::Int:
      if (auto v = parse_int(text)) return ConfigValue(*v);
      return std::nullopt;
    case ConfigType::Double:
      if (auto v = parse_double(text)) return ConfigValue(*v);
      return std::nullopt;
    case ConfigType::String:
      return ConfigValue(unquote(text));
    case ConfigType::BoolList:
      return parse_items([](std::string_view s) { return parse_bool_loose(s); });
    case ConfigType::IntList:
      return parse_items([](std::string_view s) { return parse_int(s); });
    case ConfigType::DoubleList:
      return parse_items([](std::string_view s) { return parse_double(s); });
    case ConfigType::StringList:
      return parse_items([](std::string_view s) { return std::optional<std::string>(unquote(s)); });
  }
  return std::nullopt;
}

std::string expected_text(ConfigType type) {
  switch (type) {
    case ConfigType::Bool: return "a bool (true/false/1/0/yes/no)";
    case ConfigType::Int: return "an integer (digits only, e.g. 64)";
    case ConfigType::Double: return "a float (e.g. 0.1 or 1e-3)";
    case ConfigType::String: return "a string";
    case ConfigType::BoolList: return "a list of bools (e.g. [true,false])";
    case ConfigType::IntList: return "a list of integers (e.g. [1,2,3] or 1,2,3)";
    case ConfigType::DoubleList: return "a list of floats (e.g. [0.1,1e-3])";
    case ConfigType::StringList: return "a list of strings (e.g. [a,b])";
  }
  return "?";
}

// ------------------------------------------------------------------ YAML reading

std::string yaml_where(const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.line < 0) return "";
  return fmt::format(" (line {}, column {})", m.line + 1, m.column + 1);
}

// One YAML scalar: plain scalars are inferred, quoted ones are strings, explicit tags win.
ConfigValue scalar_value(const YAML::Node& node, const std::string& key, const std::string& source) {
  const std::string& text = node.Scalar();
  const std::string& tag = node.Tag();
  const std::string core = "tag:yaml.org,2002:";
  if (tag == "!" || tag == core + "str") return text;
  if (tag == core + "int") {
    if (auto v = parse_int(text)) return *v;
    fail("config {}: key '{}'{}: '{}' is tagged !!int but is not an integer", source, key,
         yaml_where(node), text);
  }
  if (tag == core + "float") {
    if (auto v = parse_double(text)) return *v;
    fail("config {}: key '{}'{}: '{}' is tagged !!float but is not a number", source, key,
         yaml_where(node), text);
  }
  if (tag == core + "bool") {
    if (auto v = parse_bool_loose(text)) return *v;
    fail("config {}: key '{}'{}: '{}' is tagged !!bool but is not true/false", source, key,
         yaml_where(node), text);
  }
  POSGRAD_CHECK(tag == "?" || tag.empty(), "config {}: key '{}'{}: unsupported YAML tag '{}'",
                source, key, yaml_where(node), tag);
  if (looks_null(text))
    fail("config {}: key '{}'{} has no value (null); every key needs a default value", source,
         key, yaml_where(node));
  return infer_plain(text);
}

ConfigValue list_value(const YAML::Node& node, const std::string& key, const std::string& source) {
  if (node.size() == 0)
    fail("config {}: key '{}'{} is an empty list; its element type cannot be inferred, so give "
         "the default at least one element",
         source, key, yaml_where(node));
  std::vector<ConfigValue> items;
  for (const YAML::Node& item : node) {
    if (!item.IsScalar())
      fail("config {}: key '{}'{}: list items must be plain values (no maps or nested lists)",
           source, key, yaml_where(item));
    items.push_back(scalar_value(item, key, source));
  }
  auto all = [&](ConfigType t) {
    return std::all_of(items.begin(), items.end(),
                       [&](const ConfigValue& v) { return type_of_value(v) == t; });
  };
  auto all_numbers = std::all_of(items.begin(), items.end(), [](const ConfigValue& v) {
    return std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v);
  });
  if (all(ConfigType::Bool)) {
    std::vector<bool> out;
    for (auto& v : items) out.push_back(std::get<bool>(v));
    return out;
  }
  if (all(ConfigType::Int)) {
    std::vector<int64_t> out;
    for (auto& v : items) out.push_back(std::get<int64_t>(v));
    return out;
  }
  if (all_numbers) {
    std::vector<double> out;
    for (auto& v : items)
      out.push_back(std::holds_alternative<double>(v) ? std::get<double>(v)
                                                      : static_cast<double>(std::get<int64_t>(v)));
    return out;
  }
  std::vector<std::string> out;  // mixed types: keep each item's text
  for (const YAML::Node& item : node) out.push_back(item.Scalar());
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string_view last_component(std::string_view key) {
  const size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

}  // namespace

std::string type_name(ConfigType type) {
  switch (type) {
    case ConfigType::Bool: return "bool";
    case ConfigType::Int: return "int";
    case ConfigType::Double: return "float";
    case ConfigType::String: return "string";
    case ConfigType::BoolList: return "list of bool";
    case ConfigType::IntList: return "list of int";
    case ConfigType::DoubleList: return "list of float";
    case ConfigType::StringList: return "list of string";
  }
  return "?";
}

// ------------------------------------------------------------------ loading

void Config::add(std::string key, ConfigValue value) {
  POSGRAD_CHECK(!index_.count(key), "config {}: key '{}' appears twice", source_, key);
  index_.emplace(key, entries_.size());
  Entry e;
  e.key = std::move(key);
  e.default_value = value;
  e.value = std::move(value);
  entries_.push_back(std::move(e));
}

Config Config::parse(const std::string& yaml_text, const std::string& source_name) {
  Config config;
  config.source_ = source_name;
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    fail("config {}: YAML syntax error at line {}, column {}: {}", source_name, e.mark.line + 1,
         e.mark.column + 1, e.msg);
  }
  if (!root || root.IsNull()) return config;  // an empty file is an empty config
  POSGRAD_CHECK(root.IsMap(), "config {}: the top level must be a map of keys (key: value)",
                source_name);

  auto walk = [&](auto&& self, const YAML::Node& map, const std::string& prefix) -> void {
    for (const auto& kv : map) {
      const std::string name = kv.first.as<std::string>();
      const std::string key = prefix.empty() ? name : prefix + "." + name;
      POSGRAD_CHECK(!name.empty() && name.find('.') == std::string::npos &&
                        name.find('=') == std::string::npos,
                    "config {}: key '{}'{}: names must be non-empty and hold no '.' or '='",
                    source_name, key, yaml_where(kv.first));
      const YAML::Node& node = kv.second;
      if (node.IsMap()) {
        self(self, node, key);
      } else if (node.IsSequence()) {
        config.add(key, list_value(node, key, source_name));
      } else if (node.IsScalar()) {
        config.add(key, scalar_value(node, key, source_name));
      } else {
        fail("config {}: key '{}'{} has no value (null); every key needs a default value",
             source_name, key, yaml_where(kv.first));
      }
    }
  };
  walk(walk, root, "");
  return config;
}

Config Config::load(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  POSGRAD_CHECK(in.good(), "config: cannot open '{}' (current folder: {})", path.string(),
                std::filesystem::current_path().string());
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path.string());
}

// ------------------------------------------------------------------ lookup and errors

Config::Entry* Config::find(std::string_view key) {
  auto it = index_.find(std::string(key));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

const Config::Entry* Config::find(std::string_view key) const {
  auto it = index_.find(std::string(key));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

bool Config::has(std::string_view key) const { return find(key) != nullptr; }

bool Config::has_section(std::string_view prefix) const {
  const std::string p = std::string(prefix) + ".";
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& e) { return e.key.rfind(p, 0) == 0; });
}

void Config::fail_unknown_key(std::string_view key, const char* action) const {
  const std::string k(key);
  const std::string where = source_.empty() ? "" : fmt::format(" (defaults: {})", source_);

  // The children of a section: leaves as "a.b", sections as "a.c.*".
  auto children_of = [&](const std::string& section) {
    std::vector<std::string> out;
    const std::string p = section.empty() ? "" : section + ".";
    for (const Entry& e : entries_) {
      if (e.key.rfind(p, 0) != 0) continue;
      const std::string rest = e.key.substr(p.size());
      const size_t dot = rest.find('.');
      const std::string item = dot == std::string::npos ? p + rest : p + rest.substr(0, dot) + ".*";
      if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
    }
    return out;
  };

  if (has_section(k))
    fail("config: '{}' is a section, not a value; {} one of its keys: {}{}", k, action,
         join(children_of(k), ", "), where);

  // A close spelling, or the same last name under another section ("lr" -> "train.lr").
  std::vector<std::string> suggestions;
  size_t best = std::string::npos;
  for (const Entry& e : entries_) {
    const size_t d = edit_distance(k, e.key);
    if (d < best) {
      best = d;
      suggestions = {e.key};
    } else if (d == best) {
      suggestions.push_back(e.key);
    }
  }
  if (best > std::max<size_t>(2, k.size() / 3)) suggestions.clear();
  for (const Entry& e : entries_)
    if (last_component(e.key) == last_component(k) &&
        std::find(suggestions.begin(), suggestions.end(), e.key) == suggestions.end())
      suggestions.push_back(e.key);

  // The nearest existing section above the key, and its keys.
  std::string section = k;
  for (;;) {
    const size_t dot = section.rfind('.');
    section = dot == std::string::npos ? "" : section.substr(0, dot);
    if (section.empty() || has_section(section)) break;
  }
  const std::vector<std::string> siblings = children_of(section);
  std::string msg = fmt::format("config: unknown key '{}'", k);
  if (!suggestions.empty()) msg += fmt::format("; did you mean '{}'?", join(suggestions, "' or '"));
  if (entries_.empty())
    msg += "; the config has no keys";
  else if (section.empty())
    msg += fmt::format(" Top-level keys: {}", join(siblings, ", "));
  else
    msg += fmt::format(" Keys under '{}': {}", section, join(siblings, ", "));
  throw Error(msg + where);
}

const Config::Entry& Config::entry(std::string_view key) const {
  const Entry* e = find(key);
  if (!e) fail_unknown_key(key, "read");
  return *e;
}

namespace {
[[noreturn]] void fail_type(const std::string& key, ConfigType has, const char* wanted,
                            const std::string& value) {
  fail("config: key '{}' is a {} (value {}), but the app reads it as {}", key, type_name(has),
       value, wanted);
}
}  // namespace

void Config::fail_range(std::string_view key, int64_t v, const char* type) const {
  fail("config: key '{}' = {} does not fit in {}", key, v, type);
}

bool Config::get_bool(std::string_view key) const {
  const Entry& e = entry(key);
  if (!std::holds_alternative<bool>(e.value))
    fail_type(e.key, type_of_value(e.value), "bool", format_value(e.value));
  e.read = true;
  return std::get<bool>(e.value);
}

int64_t Config::get_int(std::string_view key) const {
  const Entry& e = entry(key);
  if (!std::holds_alternative<int64_t>(e.value))
    fail_type(e.key, type_of_value(e.value), "an int", format_value(e.value));
  e.read = true;
  return std::get<int64_t>(e.value);
}

double Config::get_double(std::string_view key) const {
  const Entry& e = entry(key);
  if (std::holds_alternative<double>(e.value)) {
    e.read = true;
    return std::get<double>(e.value);
  }
  if (std::holds_alternative<int64_t>(e.value)) {
    e.read = true;
    return static_cast<double>(std::get<int64_t>(e.value));
  }
  fail_type(e.key, type_of_value(e.value), "a float", format_value(e.value));
}

std::string Config::get_string(std::string_view key) const {
  const Entry& e = entry(key);
  if (!std::holds_alternative<std::string>(e.value))
    fail_type(e.key, type_of_value(e.value), "a string", format_value(e.value));
  e.read = true;
  return std::get<std::string>(e.value);
}

std::vector<bool> Config::get_bool_list(std::string_view key) const {
  const Entry& e = entry(key);
  if (!std::holds_alternative<std::vector<bool>>(e.value))
    fail_type(e.key, type_of_value(e.value), "a list of bool", format_value(e.value));
  e.read = true;
  return std::get<std::vector<bool>>(e.value);
}

std::vector<int64_t> Config::get_int_list(std::string_view key) const {
  const Entry& e = entry(key);
  if (!std::holds_alternative<std::vector<int64_t>>(e.value))
    fail_type(e.key, type_of_value(e.value), "a list of int", format_value(e.value));
  e.read = true;
  return std::get<std::vector<int64_t>>(e.value);
}

std::vector<double> Config::get_double_list(std::string_view key) const {
  const Entry& e = entry(key);
  if (std::holds_alternative<std::vector<double>>(e.value)) {
    e.read = true;
    return std::get<std::vector<double>>(e.value);
  }
  if (std::holds_alternative<std::vector<int64_t>>(e.value)) {
    e.read = true;
    const auto& ints = std::get<std::vector<int64_t>>(e.value);
    return std::vector<double>(ints.begin(), ints.end());
  }
  fail_type(e.key, type_of_value(e.value), "a list of float", format_value(e.value));
}

std::vector<std::string> Config::get_string_list(std::string_view key) const {
  const Entry& e = entry(key);
  if (!std::holds_alternative<std::vector<std::string>>(e.value))
    fail_type(e.key, type_of_value(e.value), "a list of string", format_value(e.value));
  e.read = true;
  return std::get<std::vector<std::string>>(e.value);
}

ConfigType Config::type_of(std::string_view key) const {
  return type_of_value(entry(key).value);
}

const ConfigValue& Config::value(std::string_view key) const { return entry(key).value; }

std::string Config::value_string(std::string_view key) const {
  return format_value(entry(key).value);
}

std::string Config::default_string(std::string_view key) const {
  return format_value(entry(key).default_value);
}

std::vector<std::string> Config::keys() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) out.push_back(e.key);
  return out;
}

std::vector<std::string> Config::unused_keys() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_)
    if (!e.read) out.push_back(e.key);
  return out;
}

std::vector<std::string> Config::overridden_keys() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_)
    if (e.overridden) out.push_back(e.key);
  return out;
}

// ------------------------------------------------------------------ overrides

void Config::set_from_string(std::string_view key_in, std::string_view value) {
  const std::string_view key = trim(key_in);
  POSGRAD_CHECK(!key.empty(), "config override: empty key before '=' (value '{}')", value);
  Entry* e = find(key);
  if (!e) fail_unknown_key(key, "set");
  const ConfigType type = type_of_value(e->default_value);
  std::string bad_item;
  std::optional<ConfigValue> parsed = parse_as(type, value, bad_item);
  if (!parsed) {
    std::string msg = fmt::format("config: bad value for '{}': '{}' is not {} (default: {})",
                                  e->key, std::string(trim(value)), expected_text(type),
                                  format_value(e->default_value));
    if (bad_item != std::string(value) && !bad_item.empty())
      msg += fmt::format("; the item '{}' is wrong", bad_item);
    const bool looks_float = parse_double(value).has_value() || parse_double(bad_item).has_value();
    if ((type == ConfigType::Int || type == ConfigType::IntList) && looks_float)
      msg += fmt::format(". The default{} is written as an integer; write it with a decimal "
                         "point (e.g. 1.0) if the setting should be a float",
                         source_.empty() ? "" : " in " + source_);
    throw Error(msg);
  }
  e->value = std::move(*parsed);
  e->overridden = true;
}

void Config::apply_override(std::string_view assignment) {
  const size_t eq = assignment.find('=');
  POSGRAD_CHECK(eq != std::string_view::npos,
                "config override '{}' has no '='; write it as key.sub=value", assignment);
  set_from_string(assignment.substr(0, eq), assignment.substr(eq + 1));
}

// ------------------------------------------------------------------ output

namespace {

// The keys as a tree, in first-appearance order, for nested output.
struct KeyTree {
  std::string name;
  std::optional<size_t> entry;
  std::vector<KeyTree> children;

  KeyTree& child(const std::string& n) {
    for (KeyTree& c : children)
      if (c.name == n) return c;
    children.push_back(KeyTree{n, std::nullopt, {}});
    return children.back();
  }
};

void emit_scalar(YAML::Emitter& out, const std::string& text, bool quote) {
  if (quote) out << YAML::DoubleQuoted;
  out << text;
}

void emit_value(YAML::Emitter& out, const ConfigValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          emit_scalar(out, x, needs_quotes(x));
        } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int64_t> ||
                             std::is_same_v<T, double>) {
          emit_scalar(out, format_value(ConfigValue(x)), false);
        } else {
          out << YAML::Flow << YAML::BeginSeq;
          for (const auto& item : x) {
            using Item = std::decay_t<decltype(item)>;
            if constexpr (std::is_same_v<Item, std::string>)
              emit_scalar(out, item, needs_quotes(item) || item.empty());
            else
              emit_scalar(out, format_value(ConfigValue(static_cast<Item>(item))), false);
          }
          out << YAML::EndSeq;
        }
      },
      v);
}

nlohmann::json json_value(const ConfigValue& v) {
  return std::visit(
      [](const auto& x) -> nlohmann::json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<bool>>) {
          nlohmann::json arr = nlohmann::json::array();
          for (bool b : x) arr.push_back(b);
          return arr;
        } else {
          return nlohmann::json(x);
        }
      },
      v);
}

}  // namespace

std::string Config::to_yaml() const {
  KeyTree root;
  for (size_t i = 0; i < entries_.size(); ++i) {
    KeyTree* node = &root;
    std::string_view key = entries_[i].key;
    size_t start = 0;
    for (;;) {
      const size_t dot = key.find('.', start);
      node = &node->child(std::string(key.substr(start, dot - start)));
      if (dot == std::string_view::npos) break;
      start = dot + 1;
    }
    node->entry = i;
  }
  YAML::Emitter out;
  auto emit = [&](auto&& self, const KeyTree& node) -> void {
    out << YAML::BeginMap;
    for (const KeyTree& c : node.children) {
      out << YAML::Key << c.name << YAML::Value;
      if (c.entry) emit_value(out, entries_[*c.entry].value);
      else self(self, c);
    }
    out << YAML::EndMap;
  };
  if (entries_.empty()) return "{}\n";
  emit(emit, root);
  POSGRAD_CHECK(out.good(), "config: cannot write YAML: {}", out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

nlohmann::json Config::to_json() const {
  nlohmann::json root = nlohmann::json::object();
  for (const Entry& e : entries_) {
    nlohmann::json* node = &root;
    std::string_view key = e.key;
    size_t start = 0;
    for (;;) {
      const size_t dot = key.find('.', start);
      const std::string part(key.substr(start, dot - start));
      if (dot == std::string_view::npos) {
        (*node)[part] = json_value(e.value);
        break;
      }
      node = &(*node)[part];
      start = dot + 1;
    }
  }
  return root;
}

std::string Config::describe(bool show_defaults) const {
  size_t key_width = 0, type_width = 0;
  for (const Entry& e : entries_) {
    key_width = std::max(key_width, e.key.size());
    type_width = std::max(type_width, type_name(type_of_value(e.value)).size());
  }
  std::string out;
  for (const Entry& e : entries_) {
    const std::string shown = format_value(show_defaults ? e.default_value : e.value);
    out += fmt::format("  {:<{}}  {:<{}}  {}", e.key, key_width, type_name(type_of_value(e.value)),
                       type_width, shown);
    if (!show_defaults && e.overridden)
      out += fmt::format("   (default {})", format_value(e.default_value));
    out += "\n";
  }
  return out;
}

}  // namespace posgrad::apps
