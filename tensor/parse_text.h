// parse_text: the one way posgrad reads a truth value or a number from text: settings files, -D
// overrides on the command line and positional-scheme options all go through these, so a value
// means the same wherever it is written.
//   parse_bool:   true/false, yes/no, on/off, 1/0 in any letter case (not "y"/"n": one letter
//                 is too easy to mistype)
//   parse_int64:  optional sign and decimal digits, nothing else ("3.0" and "1e3" are not ints)
//   parse_double: a decimal or exponent number, "inf", "-inf", "nan" (any case)
// Each takes the whole text (surrounding spaces allowed) and returns nullopt when it does not
// parse; the caller makes the error message, because only it knows which setting was meant.
//
// Deliberately does not: parse hexadecimal, digit separators, or units ("10k", "1GB").
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace posgrad {

std::optional<bool> parse_bool(std::string_view text);
std::optional<int64_t> parse_int64(std::string_view text);
std::optional<double> parse_double(std::string_view text);

}  // namespace posgrad
