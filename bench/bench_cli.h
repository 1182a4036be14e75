// The command line of a benchmark, on CLI11: each benchmark declares its options on a CLI::App
// (with their defaults, shown by --help) and calls parse_bench_command_line, which stops the
// program with --help (exit 0) or with one "<benchmark>: error: ..." line for a bad option or
// value (exit 2). The options themselves are each benchmark's business (see its Usage line).
//
// Deliberately does not: read settings files or environment variables (OMP_NUM_THREADS and
// POSGRAD_PYTHON are read where they are used).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace posgrad::bench {

// A check for a numeric option: the value must be a number >= `min` ("must be at least 1, not 0").
inline CLI::Validator at_least(double min) {
  const std::string bound = fmt::format("{}", min);
  return CLI::Validator(
      [min, bound](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size()) return "not a number: '" + text + "'";
        return value >= min ? std::string() : "must be at least " + bound + ", not " + text;
      },
      ">= " + bound, "at_least");
}

// One integer option --<key> per entry of `values` (the benchmarks keep their sizes in such a
// map, which also feeds their twin's command line), each >= 0 with its default shown by --help.
inline void add_integer_options(CLI::App& app, std::map<std::string, int64_t>& values) {
  for (auto& [key, value] : values) app.add_option("--" + key, value)->check(at_least(0))->capture_default_str();
}

// nullopt: go on; otherwise the exit code to return from main.
inline std::optional<int> parse_bench_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s\n(run '%s --help' for the options)\n", app.get_name().c_str(), e.what(),
                 app.get_name().c_str());
    return 2;
  }
  return std::nullopt;
}

}  // namespace posgrad::bench
