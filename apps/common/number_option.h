// The check of a CLI11 number option (charlm sample --temperature, --tokens, ...): the value must
// read as a number and satisfy a NumberRange (number_range.h), so nan and inf are refused unless
// the range allows infinity, and an out-of-range value gets one short line:
//   charlm: error: --temperature: 0 is out of range: must be > 0
// CLI11's own PositiveNumber / NonNegativeNumber let nan through and print their upper bound,
// numeric_limits<double>::max, in 300 digits.
//
//   job.add_option("--temperature", t, "softmax temperature")->check(number_in(NumberRange::above(0)));
//
// Deliberately does not: convert the value (CLI11 does, to the option's type, after the check;
// "3.5" for an int option is CLI11's conversion error), or check settings (settings.h does).
#pragma once

#include <CLI/CLI.hpp>  // Validators.hpp alone lacks its Error.hpp

#include "apps/common/number_range.h"

namespace posgrad::apps {

CLI::Validator number_in(NumberRange range);

}  // namespace posgrad::apps
