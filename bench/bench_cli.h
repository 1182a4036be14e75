// The command line of a benchmark, on CLI11: each benchmark declares its options on a CLI::App
// (with their defaults, shown by --help; a repeated option takes its last value, as the docs
// test relies on) and calls parse_bench_command_line, which stops the
// program with --help (exit 0) or with one "<benchmark>: error: ..." line for a bad option or
// value (exit 2). The options themselves are each benchmark's business (see its Usage line).
//
// Deliberately does not: read settings files or environment variables (OMP_NUM_THREADS and
// POSGRAD_PYTHON are read where they are used).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

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

// Each option may be given again; the last value wins (the docs test appends quick settings to a
// documented command). Call before adding options.
inline void later_options_win(CLI::App& app) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

// A check for a comma-separated list of sizes ("256,512,1024"): each a whole number >= 1.
inline CLI::Validator size_list() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::string item;
        for (size_t start = 0; start <= text.size();) {
          const size_t comma = std::min(text.find(',', start), text.size());
          item = text.substr(start, comma - start);
          if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || std::stoll(item) < 1)
            return "each size must be a whole number >= 1, not '" + item + "' in '" + text + "'";
          start = comma + 1;
        }
        return std::string();
      },
      "N,N,...", "size_list");
}

// The sizes of a list that size_list() accepted.
inline std::vector<int64_t> sizes_of(const std::string& text) {
  std::vector<int64_t> sizes;
  for (size_t start = 0; start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    sizes.push_back(std::stoll(text.substr(start, comma - start)));
    start = comma + 1;
  }
  return sizes;
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
