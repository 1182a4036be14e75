// number_in: see number_option.h.
#include "apps/common/number_option.h"

#include <fmt/format.h>

#include "tensor/parse_text.h"

namespace posgrad::apps {

CLI::Validator number_in(NumberRange range) {
  const std::string bounds = range.text();
  return CLI::Validator(
      [range](std::string& input) -> std::string {
        const std::optional<double> value = parse_double(input);
        if (!value) return fmt::format("'{}' is not a number", input);
        return range.violation(*value);
      },
      bounds.empty() ? "finite" : bounds, "");
}

}  // namespace posgrad::apps
