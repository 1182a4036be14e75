// NumberRange: see number_range.h.
#include "apps/common/number_range.h"

#include <cmath>

#include <fmt/format.h>

namespace posgrad::apps {

std::string NumberRange::text() const {
  // fmt's shortest round-trip form: 0.99, 1e-300, 1.7976931348623157e+308.
  const std::string lo = min ? fmt::format("{} {}", min_strict ? ">" : ">=", *min) : "";
  const std::string hi = max ? fmt::format("<= {}", *max) : "";
  std::string bounds = !lo.empty() && !hi.empty() ? lo + " and " + hi : lo + hi;
  if (infinite_allowed) bounds += bounds.empty() ? "inf allowed" : ", inf allowed";
  return bounds;
}

std::string NumberRange::violation(double value) const {
  if (std::isnan(value)) return "nan is not a number";
  const std::string bounds = text();
  if (std::isinf(value) && !infinite_allowed)
    return fmt::format("{} is not a finite number{}", value, bounds.empty() ? "" : "; must be " + bounds);
  const bool below = min && (min_strict ? !(value > *min) : !(value >= *min));
  const bool over = max && !(value <= *max);
  if (below || over) return fmt::format("{} is out of range: must be {}", value, bounds);
  return "";
}

}  // namespace posgrad::apps
