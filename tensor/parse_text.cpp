// parse_text: see parse_text.h.
#include "tensor/parse_text.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace posgrad {

namespace {

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

}  // namespace

std::optional<bool> parse_bool(std::string_view text) {
  const std::string l = lower(trim(text));
  if (l == "true" || l == "yes" || l == "on" || l == "1") return true;
  if (l == "false" || l == "no" || l == "off" || l == "0") return false;
  return std::nullopt;
}

std::optional<int64_t> parse_int64(std::string_view text) {
  std::string_view s = trim(text);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty() || s.front() == '+' || (s.front() == '-' && text.find('+') != std::string_view::npos))
    return std::nullopt;
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view text) {
  std::string_view s = trim(text);
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s.front() == '+' || s.front() == '-') return std::nullopt;
  const std::string l = lower(s);
  if (l == "inf" || l == "infinity" || l == ".inf") return negative ? -HUGE_VAL : HUGE_VAL;
  if (l == "nan" || l == ".nan") return std::numeric_limits<double>::quiet_NaN();
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return negative ? -v : v;
}

}  // namespace posgrad
