// Config: an app's settings as a tree of typed values, loaded from a YAML file of defaults
// (configs/<app>.yaml) and changed by command-line overrides ("train.lr=1e-3").
//
// Keys are dotted paths into nested YAML maps ("train.batch_size"). Every leaf has a type fixed
// by its default: bool, int (int64), float (double), string, or a list of one of those (a YAML
// sequence). An override is parsed to the type of the default, so a typo or a wrong type is an
// error at start-up, never a silently ignored setting. Typed getters throw posgrad::Error on a
// missing key or a wrong type; unused_keys() tells which settings the app never read.
//
// Deliberately does not: add keys that are not in the defaults, keep YAML comments or anchors
// on output, support nulls, maps inside lists or empty-list defaults (their element type would
// be unknown), or lock for concurrent use (get() marks keys as read without synchronisation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace posgrad::apps {

// The type of a config leaf; the order matches the alternatives of ConfigValue.
enum class ConfigType { Bool, Int, Double, String, BoolList, IntList, DoubleList, StringList };

using ConfigValue = std::variant<bool, int64_t, double, std::string, std::vector<bool>,
                                 std::vector<int64_t>, std::vector<double>, std::vector<std::string>>;

// "bool", "int", "float", "string", "list of int", ...
std::string type_name(ConfigType type);

class Config {
 public:
  Config() = default;

  // Reads a YAML file whose top level is a map. Throws on a missing file, a YAML syntax error
  // (with line and column), a null value, an empty list or a map inside a list.
  static Config load(const std::filesystem::path& path);
  // Same from YAML text; `source_name` appears in error messages.
  static Config parse(const std::string& yaml_text, const std::string& source_name = "<string>");

  // "key.sub=value": sets an existing key, parsing `value` to the key's type:
  //   bool: true/false/1/0/yes/no/on/off; int: digits only ("3.5" is an error);
  //   float: "0.1", "1e-3", "3", "inf"; string: as is (surrounding quotes are removed);
  //   list: "[1,2,3]" or "1,2,3" ("[]" or "" is the empty list).
  // An unknown key is an error naming the key, a close match and the valid keys beside it.
  void apply_override(std::string_view assignment);
  // The same with key and value apart.
  void set_from_string(std::string_view key, std::string_view value);

  // Typed read of a leaf; marks it as read. T is one of bool, int, int64_t, std::size_t
  // (must be >= 0), double, float (an int leaf reads as a float too), std::string, or a
  // std::vector of those. Throws on a missing key (naming nearby keys) or a wrong type.
  template <typename T>
  T get(std::string_view key) const;

  bool has(std::string_view key) const;        // a leaf with this exact key
  bool has_section(std::string_view prefix) const;  // some leaf lies under "prefix."
  ConfigType type_of(std::string_view key) const;
  const ConfigValue& value(std::string_view key) const;  // does not mark as read
  // The value written as one would on the command line: 64, 0.001, true, text, [1, 2, 3].
  std::string value_string(std::string_view key) const;
  std::string default_string(std::string_view key) const;  // the value before overrides

  std::vector<std::string> keys() const;             // every leaf, in file order
  std::vector<std::string> unused_keys() const;      // leaves never read with get()
  std::vector<std::string> overridden_keys() const;  // leaves changed by overrides
  const std::string& source() const { return source_; }  // file the defaults came from
  bool empty() const { return entries_.empty(); }

  // The resolved config as YAML (nested maps, short lists in flow style); loading it back
  // gives the same keys, types and values.
  std::string to_yaml() const;
  nlohmann::json to_json() const;
  // One line per key: "  key  type  value", aligned; used by --help.
  std::string describe(bool show_defaults = true) const;

 private:
  struct Entry {
    std::string key;
    ConfigValue value;
    ConfigValue default_value;
    bool overridden = false;
    mutable bool read = false;
  };

  const Entry& entry(std::string_view key) const;
  Entry* find(std::string_view key);
  const Entry* find(std::string_view key) const;
  void add(std::string key, ConfigValue value);
  [[noreturn]] void fail_unknown_key(std::string_view key, const char* action) const;

  bool get_bool(std::string_view key) const;
  int64_t get_int(std::string_view key) const;
  double get_double(std::string_view key) const;
  std::string get_string(std::string_view key) const;
  std::vector<bool> get_bool_list(std::string_view key) const;
  std::vector<int64_t> get_int_list(std::string_view key) const;
  std::vector<double> get_double_list(std::string_view key) const;
  std::vector<std::string> get_string_list(std::string_view key) const;
  [[noreturn]] void fail_range(std::string_view key, int64_t v, const char* type) const;

  template <typename Narrow>
  Narrow narrow(std::string_view key, int64_t v, const char* type) const {
    if constexpr (std::is_unsigned_v<Narrow>) {
      if (v < 0) fail_range(key, v, type);
    } else {
      if (v < static_cast<int64_t>(std::numeric_limits<Narrow>::min()) ||
          v > static_cast<int64_t>(std::numeric_limits<Narrow>::max()))
        fail_range(key, v, type);
    }
    return static_cast<Narrow>(v);
  }

  template <typename>
  static constexpr bool kUnsupported = false;

  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::size_t> index_;
  std::string source_;
};

template <typename T>
T Config::get(std::string_view key) const {
  if constexpr (std::is_same_v<T, bool>) {
    return get_bool(key);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return get_int(key);
  } else if constexpr (std::is_same_v<T, int>) {
    return narrow<int>(key, get_int(key), "int");
  } else if constexpr (std::is_same_v<T, std::size_t>) {
    return narrow<std::size_t>(key, get_int(key), "size_t (a count, >= 0)");
  } else if constexpr (std::is_same_v<T, double>) {
    return get_double(key);
  } else if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(get_double(key));
  } else if constexpr (std::is_same_v<T, std::string>) {
    return get_string(key);
  } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
    return get_bool_list(key);
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    return get_int_list(key);
  } else if constexpr (std::is_same_v<T, std::vector<int>>) {
    std::vector<int> out;
    for (int64_t v : get_int_list(key)) out.push_back(narrow<int>(key, v, "int"));
    return out;
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    return get_double_list(key);
  } else if constexpr (std::is_same_v<T, std::vector<float>>) {
    std::vector<float> out;
    for (double v : get_double_list(key)) out.push_back(static_cast<float>(v));
    return out;
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    return get_string_list(key);
  } else {
    static_assert(kUnsupported<T>,
                  "Config::get<T>: T must be bool, int, int64_t, size_t, double, float, "
                  "std::string or a std::vector of one of those");
  }
}

}  // namespace posgrad::apps
