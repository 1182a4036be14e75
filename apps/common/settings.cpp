// Settings: see settings.h.
#include "apps/common/settings.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "tensor/error.h"
#include "tensor/parse_text.h"

namespace posgrad::apps {

// ------------------------------------------------------------------ text form of one value

namespace setting_codec {
std::optional<bool> parse(const std::string& text, bool*) { return parse_bool(text); }
std::optional<int64_t> parse(const std::string& text, int64_t*) { return parse_int64(text); }
std::optional<int> parse(const std::string& text, int*) {
  const auto v = parse_int64(text);
  if (!v || *v < INT32_MIN || *v > INT32_MAX) return std::nullopt;
  return static_cast<int>(*v);
}
std::optional<double> parse(const std::string& text, double*) { return parse_double(text); }
std::optional<std::string> parse(const std::string& text, std::string*) { return text; }
std::string format(bool v) { return v ? "true" : "false"; }
std::string format(int64_t v) { return std::to_string(v); }
std::string format(int v) { return std::to_string(v); }
std::string format(double v) { return fmt::format("{}", v); }  // shortest text that reads back exactly
std::string format(const std::string& v) { return v; }
}  // namespace setting_codec

namespace {

std::string unquote(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
    s = s.substr(1, s.size() - 2);
  return std::string(s);
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(" \t") - b + 1));
}

// "[1, 2]" or "1,2" (command line, or a plain YAML scalar given to a list setting) -> items.
std::vector<std::string> split_list(std::string text) {
  text = trim(text);
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  std::vector<std::string> items;
  if (trim(text).empty()) return items;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) items.push_back(unquote(trim(item)));
  return items;
}

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
// Settings are text: to_yaml() could not write other bytes so that they read back the same.
bool is_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    const size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? b : (b & (0x7F >> n));
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < smallest[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

// Levenshtein distance between a and b when it is below `limit`, else `limit` (the "did you mean"
// hints only want close matches). Stops early: the distance is at least the difference of the
// lengths, and no later row of the table goes below the smallest entry of the current one, so a
// long mistyped key costs one comparison instead of its length times the candidate's.
size_t edit_distance_below(std::string_view a, std::string_view b, size_t limit) {
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) >= limit) return limit;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    size_t row_min = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
      row_min = std::min(row_min, row[j]);
    }
    if (row_min >= limit) return limit;
  }
  return std::min(row[b.size()], limit);
}

}  // namespace

// ------------------------------------------------------------------ Setting

Setting& Setting::choices(std::vector<std::string> allowed) {
  POSGRAD_CHECK(is_string_, "setting '{}': choices() is only for string settings", key_);
  choices_ = std::move(allowed);
  POSGRAD_CHECK(violation({}, items_()).empty(), "setting '{}': the default {} is not {}", key_, format_(),
                constraint_text());
  return *this;
}

Setting& Setting::at_least(double bound) {
  POSGRAD_CHECK(is_number_, "setting '{}': at_least() is only for number settings", key_);
  range_.min = bound;
  range_.min_strict = false;
  return *this;
}

Setting& Setting::above(double bound) {
  at_least(bound);
  range_.min_strict = true;
  return *this;
}

Setting& Setting::at_most(double bound) {
  POSGRAD_CHECK(is_number_, "setting '{}': at_most() is only for number settings", key_);
  range_.max = bound;
  return *this;
}

Setting& Setting::allow_infinite() {
  POSGRAD_CHECK(type_ == "float" || type_ == "list of float", "setting '{}': allow_infinite() is only for float settings",
                key_);
  range_.infinite_allowed = true;
  return *this;
}

std::string Setting::constraint_text() const {
  if (!choices_.empty()) return fmt::format("one of: {}", fmt::join(choices_, ", "));
  return range_.text();
}

std::string Setting::violation(const std::vector<double>& numbers, const std::vector<std::string>& texts) const {
  for (double v : numbers)
    if (std::string why = range_.violation(v); !why.empty()) return why;
  if (!choices_.empty())
    for (const std::string& t : texts)
      if (std::find(choices_.begin(), choices_.end(), t) == choices_.end()) {
        std::string close;
        size_t best = 3;
        for (const std::string& c : choices_)
          if (size_t d = edit_distance_below(t, c, best); d < best) best = d, close = c;
        return fmt::format("'{}' is not a valid choice{}; expected {}", t,
                           close.empty() ? "" : fmt::format(" (did you mean '{}'?)", close), constraint_text());
      }
  return "";
}

void Setting::assign(const std::vector<std::string>& items, bool as_list, const std::string& origin) {
  std::vector<std::string> values = items;
  if (is_list_ && !as_list) {
    values = split_list(items.empty() ? "" : items.front());
  } else if (!is_list_ && (as_list || items.size() != 1)) {
    fail("{}: setting '{}' takes one {}, got a list", origin, key_, type_);
  }
  for (const std::string& v : values)
    if (!is_utf8(v))
      fail("{}: bad value for setting '{}' ({}): the text is not valid UTF-8", origin, key_, type_);
  const std::string why = store_(values);
  if (!why.empty())
    fail("{}: bad value for setting '{}' ({}{}): {}", origin, key_, type_,
         help_.empty() ? "" : ", " + help_, why);
}

// ------------------------------------------------------------------ Settings

Setting& Settings::declare(std::string key, std::string help, std::string type, bool is_list, bool is_number,
                           bool is_string) {
  POSGRAD_CHECK(!key.empty() && key.front() != '.' && key.back() != '.', "Settings: bad key '{}'", key);
  for (const Setting& s : settings_) {
    POSGRAD_CHECK(s.key_ != key, "Settings: '{}' declared twice", key);
    POSGRAD_CHECK(s.key_.rfind(key + ".", 0) != 0 && key.rfind(s.key_ + ".", 0) != 0,
                  "Settings: '{}' and '{}' cannot both be settings (one is a section of the other)", key, s.key_);
  }
  Setting& s = settings_.emplace_back();
  s.key_ = std::move(key);
  s.help_ = std::move(help);
  s.type_ = std::move(type);
  s.is_list_ = is_list;
  s.is_number_ = is_number;
  s.is_string_ = is_string;
  return s;
}

const Setting* Settings::find(std::string_view key) const {
  for (const Setting& s : settings_)
    if (s.key_ == key) return &s;
  return nullptr;
}

void Settings::rename(std::string old_key, std::string new_key, std::map<std::string, std::string> values) {
  renamed_.push_back({std::move(old_key), std::move(new_key), std::move(values)});
}

Setting& Settings::resolve(std::string_view key, std::vector<std::string>& items, const std::string& origin) {
  for (const Renamed& r : renamed_) {
    if (r.old_key != key) continue;
    if (!r.values.empty())
      for (std::string& item : items) {
        const auto it = r.values.find(item);
        if (it == r.values.end())
          fail("{}: '{}' is the old name of '{}', and its value '{}' has no equivalent there; set '{}' instead "
               "(--help lists its values)",
               origin, r.old_key, r.new_key, item, r.new_key);
        item = it->second;
      }
    return require(r.new_key, origin);
  }
  return require(key, origin);
}

Setting& Settings::require(std::string_view key, const std::string& origin) {
  for (Setting& s : settings_)
    if (s.key_ == key) return s;
  std::string close;
  size_t best = std::max<size_t>(3, key.size() / 3) + 1;
  for (const Setting& s : settings_)
    if (size_t d = edit_distance_below(key, s.key_, best); d < best) best = d, close = s.key_;
  const auto dot = key.rfind('.');
  std::vector<std::string> siblings;
  if (dot != std::string_view::npos)
    for (const Setting& s : settings_)
      if (s.key_.compare(0, dot + 1, key.substr(0, dot + 1)) == 0) siblings.push_back(s.key_);
  fail("{}: unknown setting '{}'{}{}", origin, key,
       close.empty() ? "" : fmt::format("; did you mean '{}'?", close),
       siblings.empty() ? std::string("; --help lists every setting")
                        : fmt::format("; settings under '{}': {}", key.substr(0, dot), fmt::join(siblings, ", ")));
}

namespace {

// Settings keys have a few sections; deeper nesting is a mistake, or an alias of a map inside that
// map (`a: &x {b: *x}`: yaml-cpp builds a cycle, which recursion would follow until the stack
// overflows).
constexpr int kMaxSectionDepth = 32;

// One value of a settings file: its dotted key, the node and the line of its key.
struct Leaf {
  std::string key;
  YAML::Node node;
  int line;
};

// Collects every value of a YAML map that is not a map, in file order. A key given twice in one
// map is an error (yaml-cpp keeps both and the later would win), and so is one dotted key reached
// twice (`train.lr: 1` and `train: {lr: 2}`).
void walk(const YAML::Node& map, const std::string& prefix, std::vector<Leaf>& leaves,
          std::map<std::string, int>& first_line, const std::string& origin, int depth = 0) {
  if (depth > kMaxSectionDepth)
    fail("{}: sections nested deeper than {} levels under '{}' (an alias of a map inside itself?)", origin,
         kMaxSectionDepth, prefix.substr(0, std::min<size_t>(prefix.size(), 80)));
  std::map<std::string, int> in_this_map;
  for (const auto& item : map) {
    const int line = item.first.Mark().line + 1;
    if (!item.first.IsScalar())  // YAML allows `? {a: 1}: x` and `[a, b]: x`; as<std::string> would throw
      fail("{} (line {}): a setting name must be plain text, not {}", origin, line,
           item.first.IsMap() ? "a map" : item.first.IsSequence() ? "a list" : "null");
    const std::string key = prefix + item.first.as<std::string>();
    const auto [seen, fresh] = in_this_map.emplace(item.first.as<std::string>(), line);
    if (!fresh) fail("{} (line {}): '{}' is given twice (first on line {})", origin, line, key, seen->second);
    if (item.second.IsMap()) {
      walk(item.second, key + ".", leaves, first_line, origin, depth + 1);
      continue;
    }
    const auto [earlier, first] = first_line.emplace(key, line);
    if (!first) fail("{} (line {}): '{}' is given twice (first on line {})", origin, line, key, earlier->second);
    leaves.push_back({key, item.second, line});
  }
}

}  // namespace

void Settings::load_yaml_text(const std::string& text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail("{}: not valid YAML: {} (line {}, column {})", origin, e.msg, e.mark.line + 1, e.mark.column + 1);
  }
  if (root.IsNull()) return;  // an empty preset changes nothing
  POSGRAD_CHECK(root.IsMap(), "{}: the top level must be a map of settings (key: value)", origin);
  std::vector<Leaf> leaves;
  std::map<std::string, int> first_line;
  walk(root, "", leaves, first_line, origin);  // the whole file first: a repeated key changes nothing
  for (const Leaf& leaf : leaves) {
    const std::string& key = leaf.key;
    const YAML::Node& node = leaf.node;
    const std::string where = fmt::format("{} (line {})", origin, leaf.line);
    std::vector<std::string> items;
    if (node.IsNull()) resolve(key, items, origin), fail("{}: setting '{}' has no value", where, key);
    if (node.IsSequence()) {
      for (const auto& element : node) {
        POSGRAD_CHECK(element.IsScalar(), "{}: setting '{}': list elements must be plain values", where, key);
        items.push_back(element.Scalar());
      }
    } else {
      items.push_back(node.Scalar());
    }
    Setting& s = resolve(key, items, where);
    s.assign(items, node.IsSequence(), where);
  }
}

void Settings::load_yaml_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  POSGRAD_CHECK(in.good(), "settings file '{}' cannot be read (does it exist?)", path.string());
  std::stringstream text;
  text << in.rdbuf();
  load_yaml_text(text.str(), fmt::format("settings file '{}'", path.string()));
}

void Settings::apply_override(std::string_view assignment) {
  const auto eq = assignment.find('=');
  POSGRAD_CHECK(eq != std::string_view::npos && eq > 0,
                "override '-D{}' is not key=value (e.g. -Dtrain.lr=1e-3)", assignment);
  const std::string key = trim(assignment.substr(0, eq));
  const std::string origin = fmt::format("override '-D{}'", assignment);
  std::vector<std::string> items{unquote(trim(assignment.substr(eq + 1)))};
  resolve(key, items, origin).assign(items, false, origin);
}

std::vector<std::string> Settings::changed_keys() const {
  std::vector<std::string> keys;
  for (const Setting& s : settings_)
    if (s.value_text() != s.default_text()) keys.push_back(s.key_);
  return keys;
}

namespace {

struct Section {
  std::string name;
  const Setting* leaf = nullptr;
  std::vector<Section> children;  // in order of first declaration
};

void insert(Section& root, const Setting& s) {
  Section* at = &root;
  std::stringstream parts(s.key());
  std::string part;
  while (std::getline(parts, part, '.')) {
    auto it = std::find_if(at->children.begin(), at->children.end(), [&](const Section& c) { return c.name == part; });
    if (it == at->children.end()) {
      at->children.push_back(Section{part, nullptr, {}});
      it = at->children.end() - 1;
    }
    at = &*it;
  }
  at->leaf = &s;
}

// A string YAML would read as something else (a bool, a number, null) is quoted.
void emit_text(YAML::Emitter& out, const std::string& text, bool is_string) {
  const bool ambiguous = text.empty() || parse_bool(text) || parse_double(text) || text == "~" || text == "null";
  if (is_string && ambiguous) out << YAML::DoubleQuoted << text;
  else out << text;
}

void emit(YAML::Emitter& out, const Section& section) {
  out << YAML::BeginMap;
  for (const Section& c : section.children) {
    out << YAML::Key << c.name << YAML::Value;
    if (!c.leaf) {
      emit(out, c);
      continue;
    }
    const bool is_string = c.leaf->type() == "string" || c.leaf->type() == "list of string";
    if (c.leaf->is_list()) {
      out << YAML::Flow << YAML::BeginSeq;
      for (const std::string& item : c.leaf->value_items()) emit_text(out, item, is_string);
      out << YAML::EndSeq;
    } else {
      emit_text(out, c.leaf->value_text(), is_string);
    }
    if (!c.leaf->help().empty()) out << YAML::Comment(c.leaf->help());
  }
  out << YAML::EndMap;
}

}  // namespace

std::string Settings::to_yaml() const {
  Section root;
  for (const Setting& s : settings_) insert(root, s);
  YAML::Emitter out;
  emit(out, root);
  return std::string(out.c_str()) + "\n";
}

std::string Settings::describe() const {
  size_t key_width = 0, type_width = 0, default_width = 0;
  for (const Setting& s : settings_) {
    key_width = std::max(key_width, s.key().size());
    type_width = std::max(type_width, s.type().size());
    default_width = std::max(default_width, s.default_text().size());
  }
  std::string out;
  for (const Setting& s : settings_) {
    const std::string constraint = s.constraint_text();
    out += fmt::format("  {:<{}}  {:<{}}  {:<{}}  {}{}\n", s.key(), key_width, s.type(), type_width,
                       s.default_text(), default_width, s.help(), constraint.empty() ? "" : " (" + constraint + ")");
  }
  return out;
}

}  // namespace posgrad::apps
