// posgrad::Error: the one exception type of the framework, and POSGRAD_CHECK to raise it.
// Messages name the op and the offending shapes, dtypes, devices, files or keys (formatted with
// fmt). This file deliberately holds no recovery logic: apps catch Error at main(), print one
// line and exit non-zero.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdexcept>
#include <string>

namespace posgrad {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws Error with an fmt-formatted message: fail("matmul: inner sizes differ ({} vs {})", a, b).
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace posgrad

// POSGRAD_CHECK(cond, "fmt string", args...): throws posgrad::Error when cond is false.
#define POSGRAD_CHECK(cond, ...)          \
  do {                                    \
    if (!(cond)) ::posgrad::fail(__VA_ARGS__); \
  } while (0)
