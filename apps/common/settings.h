// Settings: an app's settings, declared once by the app as a plain struct with defaults, then
// filled from YAML presets and -Dkey=value overrides, typed by the declaration (never by how a
// value happens to be spelled in a file).
//
//   struct TrainSettings { double lr = 1e-2; int64_t steps = 1000; std::string optimizer = "adam"; };
//   TrainSettings t;
//   Settings s;
//   s.add("train.lr", t.lr, "learning rate").above(0);
//   s.add("train.steps", t.steps, "optimizer steps").at_least(1);
//   s.add("train.optimizer", t.optimizer, "optimizer").choices({"adam", "adamw", "sgd"});
//   s.load_yaml_file("configs/my_preset.yaml");   // a preset holds only what it changes
//   s.apply_override("train.lr=3e-3");            // t.lr is now 0.003
//
// Types: bool, int64_t, int, double, std::string, and std::vector of int64_t, double or
// std::string. Text is read with tensor/parse_text.h, the same rules as positional-scheme
// options: an int setting rejects "3.5", a float setting takes "3" or "1e-3", a bool takes
// true/false/yes/no/on/off/1/0; a list takes a YAML list or "[1, 2]" / "1,2" on the command line.
// Values must be valid UTF-8 text. Sections nest at most 32 deep (which also stops a YAML alias
// of a map inside itself).
// A float setting takes finite numbers only: nan is never a value, and inf / -inf only where the
// app opts in with allow_infinite() (where infinity means something, e.g. "no limit").
// Within one settings file each key is given once (a YAML key twice in one map, or one setting
// spelled twice, `train.lr` and `train: {lr}`, is an error naming both lines); across presets and
// overrides the later one wins.
// Errors (posgrad::Error) name the setting, the value, where it came from, and what was
// expected: the type, the choices or the range; an unknown key names the closest declared key.
// to_yaml() writes every setting with its resolved value and help as a comment: loading it back
// (--config run/config.yaml) repeats the run exactly (floats are written in shortest round-trip
// form).
//
// Deliberately does not: hold settings that were not declared, keep YAML anchors or comments of
// the input, nest lists, or own the values (the app's struct does; the Settings must not
// outlive it).
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "apps/common/number_range.h"

namespace posgrad::apps {

// One declared setting: its key, help, type, constraints and the binding to the app's field.
class Setting {
 public:
  // Only for string settings (and each element of a string list): one of `allowed`.
  Setting& choices(std::vector<std::string> allowed);
  // Only for number settings (and each element of a number list): bounds.
  Setting& at_least(double bound);  // >= bound
  Setting& at_most(double bound);   // <= bound
  Setting& above(double bound);     // > bound
  // Only for float settings (and float lists): inf and -inf are values too (within the bounds).
  Setting& allow_infinite();

  const std::string& key() const { return key_; }
  const std::string& help() const { return help_; }
  const std::string& type() const { return type_; }     // "int", "float", "list of int", ...
  std::string value_text() const { return format_(); }  // as written in YAML: 0.01, [1, 2], adam
  // Each element as text (one for a scalar): what to_yaml writes. Not split_list(value_text()):
  // a string element may hold ", " or start with a space.
  std::vector<std::string> value_items() const { return items_(); }
  const std::string& default_text() const { return default_text_; }
  std::string constraint_text() const;  // "one of: adam, adamw, sgd", "> 0", "" when any finite value will do
  bool is_list() const { return is_list_; }

  // Sets the field from one scalar text or from list items. Throws posgrad::Error naming the
  // key, the value, `origin` ("settings file 'x.yaml'", "-D override") and what was expected;
  // the field is unchanged then.
  void assign(const std::vector<std::string>& items, bool as_list, const std::string& origin);

 private:
  friend class Settings;
  // "" when the values (numbers of a number setting, texts of a string setting) satisfy the
  // constraints, else why not.
  std::string violation(const std::vector<double>& numbers, const std::vector<std::string>& texts) const;

  std::string key_, help_, type_, default_text_;
  bool is_list_ = false, is_number_ = false, is_string_ = false;
  std::vector<std::string> choices_;
  NumberRange range_;  // number settings only
  // Parses the items and, if they parse and satisfy the constraints, stores them in the field.
  // Returns "" on success, else what is wrong.
  std::function<std::string(const std::vector<std::string>&)> store_;
  std::function<std::string()> format_;
  std::function<std::vector<std::string>()> items_;
};

class Settings {
 public:
  Settings() = default;
  Settings(const Settings&) = delete;  // the bindings point into the app's struct
  Settings& operator=(const Settings&) = delete;

  // Declares `key` bound to `field`; the field's current value is the default.
  template <typename T>
  Setting& add(std::string key, T& field, std::string help);

  // An old name of a setting, so a run's config.yaml written before the rename still loads:
  // giving `old_key` (in a file or -D) sets `new_key`. `values`, when not empty, translates each old
  // value text (e.g. "false" -> "reference"); an old value it does not list is an Error naming both
  // keys. --help and to_yaml() know only the new key.
  void rename(std::string old_key, std::string new_key, std::map<std::string, std::string> values = {});

  // Applies every key of a YAML file (a map; nested maps make dotted keys). Errors name the file.
  void load_yaml_file(const std::filesystem::path& path);
  void load_yaml_text(const std::string& text, const std::string& origin);
  // "key.sub=value" from the command line.
  void apply_override(std::string_view assignment);

  const std::deque<Setting>& all() const { return settings_; }
  const Setting* find(std::string_view key) const;
  // Keys whose value differs from the declared default, in declaration order.
  std::vector<std::string> changed_keys() const;

  // Every setting as nested YAML, each with its help as a comment.
  std::string to_yaml() const;
  // One aligned line per setting: key, type, default, help and constraint; for --help.
  std::string describe() const;

 private:
  Setting& declare(std::string key, std::string help, std::string type, bool is_list, bool is_number,
                   bool is_string);
  Setting& require(std::string_view key, const std::string& origin);
  // The setting `key` names (through a rename) and the items translated for it.
  Setting& resolve(std::string_view key, std::vector<std::string>& items, const std::string& origin);
  std::deque<Setting> settings_;  // a deque: declared Settings never move
  struct Renamed {
    std::string old_key, new_key;
    std::map<std::string, std::string> values;
  };
  std::vector<Renamed> renamed_;
};

// The text form of one value: how settings are parsed and written (settings.cpp).
namespace setting_codec {
std::optional<bool> parse(const std::string& text, bool*);
std::optional<int64_t> parse(const std::string& text, int64_t*);
std::optional<int> parse(const std::string& text, int*);
std::optional<double> parse(const std::string& text, double*);
std::optional<std::string> parse(const std::string& text, std::string*);
std::string format(bool v);
std::string format(int64_t v);
std::string format(int v);
std::string format(double v);
std::string format(const std::string& v);
template <typename T> constexpr const char* type_name() {
  if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, int>) return "int";
  else if constexpr (std::is_same_v<T, double>) return "float";
  else return "string";
}
template <typename T> struct List : std::false_type { using element = T; };
template <typename T> struct List<std::vector<T>> : std::true_type { using element = T; };
}  // namespace setting_codec

template <typename T>
Setting& Settings::add(std::string key, T& field, std::string help) {
  using E = typename setting_codec::List<T>::element;
  constexpr bool is_list = setting_codec::List<T>::value;
  constexpr bool is_number = std::is_same_v<E, int64_t> || std::is_same_v<E, int> || std::is_same_v<E, double>;
  constexpr bool is_string = std::is_same_v<E, std::string>;
  static_assert(is_number || is_string || (std::is_same_v<T, bool>),
                "Settings::add: the field must be bool, int, int64_t, double, std::string or a "
                "std::vector of int, int64_t, double or std::string");
  Setting& s = declare(std::move(key), std::move(help),
                       std::string(is_list ? "list of " : "") + setting_codec::type_name<E>(), is_list,
                       is_number, is_string);
  s.store_ = [&s, &field](const std::vector<std::string>& items) -> std::string {
    std::vector<E> parsed;
    for (const std::string& item : items) {
      auto v = setting_codec::parse(item, static_cast<E*>(nullptr));
      if (!v) return fmt::format("'{}' is not {} {}", item, is_list ? "a list element of type" : "of type",
                                 setting_codec::type_name<E>());
      parsed.push_back(*v);
    }
    std::vector<double> numbers;
    if constexpr (is_number) numbers.assign(parsed.begin(), parsed.end());
    std::vector<std::string> texts;
    if constexpr (is_string) texts = parsed;
    if (std::string why = s.violation(numbers, texts); !why.empty()) return why;
    if constexpr (is_list) field.assign(parsed.begin(), parsed.end());
    else field = parsed.front();
    return "";
  };
  s.format_ = [&field] {
    if constexpr (is_list) {
      std::string out = "[";
      for (size_t i = 0; i < field.size(); ++i) out += (i ? ", " : "") + setting_codec::format(field[i]);
      return out + "]";
    } else {
      return setting_codec::format(field);
    }
  };
  s.items_ = [&field] {
    if constexpr (is_list) {
      std::vector<std::string> out;
      for (const auto& element : field) out.push_back(setting_codec::format(element));
      return out;
    } else {
      return std::vector<std::string>{setting_codec::format(field)};
    }
  };
  s.default_text_ = s.format_();
  return s;
}

}  // namespace posgrad::apps
