// NumberRange: the values a number setting or number option accepts, and the one phrase that says
// why a value is not one of them:
//   "nan is not a number"                       (NaN is never a value)
//   "inf is not a finite number; must be > 0"   (finite unless infinity is allowed)
//   "-1 is out of range: must be >= 0"
// Bounds print as a reader writes them ("> 0", ">= 0 and <= 1"), never as numeric_limits digits.
// settings.h uses it for every number setting; option_checks.h for CLI11 number options.
//
// Deliberately does not: parse text (tensor/parse_text.h does), or know about integers (an int
// is always finite; the caller decides its type).
#pragma once

#include <optional>
#include <string>

namespace posgrad::apps {

struct NumberRange {
  std::optional<double> min, max;
  bool min_strict = false;        // min is excluded: > min, not >= min
  bool infinite_allowed = false;  // inf and -inf are values (still subject to the bounds)

  static NumberRange above(double bound) { return {bound, std::nullopt, true, false}; }
  static NumberRange at_least(double bound) { return {bound, std::nullopt, false, false}; }

  // "> 0", ">= 0 and <= 1", ">= 0, inf allowed", "" when any finite number will do.
  std::string text() const;
  // "" when `value` is accepted, else why not (see above).
  std::string violation(double value) const;
};

}  // namespace posgrad::apps
