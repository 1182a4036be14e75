// The options of a program, a job or a subcommand, declared through one small typed interface so
// that CLI11 (Debian's header-only 2.1.2) is compiled in options.cpp and cli.cpp alone, not in
// every program's main.cpp: CLI11's inline code cost about 5.6 CPU-s of -O3 in each file that
// declared options with it (docs/design.md, "Build and test time").
//
//   CommandLine cli("bench_sgemm", "Times posgrad's sgemm ...", CommandLine::kLaterOptionsWin);
//   cli.options().integer("--reps", reps, "timed repetitions", NumberRange::at_least(1))
//                .choice("--isa", isa, {"native", "avx2"}, "which kernel")
//                .flag("--no-torch", no_torch, "skip the PyTorch twin");
//   if (const auto exit_code = cli.parse(argc, argv)) return *exit_code;
//
// Every option shows its default in --help. The checks print one short reason after the option's
// name: "--temperature: 0 is out of range: must be > 0" (a NumberRange, number_range.h), "--out:
// an empty path is not a folder or a file" (every path option), "--split: 'train' is not one of
// val, test". CommandLine::parse returns the exit code (0 after --help; 2 after a usage error, with
// one "<name>: error: ..." line and a hint) or nothing when the program goes on.
//
// Deliberately does not: read settings files or -D assignments (cli.h's AppCommandLine does),
// or environment variables.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/common/number_range.h"

namespace CLI {
class App;
class Option;
}

namespace posgrad::apps {

class Options {
 public:
  explicit Options(CLI::App& app) : app_(&app) {}

  // A path (a positional NAME, or --NAME): an empty value is a usage error.
  Options& path(const std::string& name, std::string& value, const std::string& help);
  // The same, and it must be given.
  Options& required_path(const std::string& name, std::string& value, const std::string& help);
  // A path that must name an existing file.
  Options& existing_file(const std::string& name, std::string& value, const std::string& help);
  Options& text(const std::string& name, std::string& value, const std::string& help);
  // Text that may be left out but not given empty ("--base-url: empty (leave the option out for
  // the default)"): an empty value would silently mean the default.
  Options& non_empty_text(const std::string& name, std::string& value, const std::string& help);
  // A repeatable option, or a positional list; `required`: at least one value.
  Options& texts(const std::string& name, std::vector<std::string>& values, const std::string& help,
                 bool required = false);
  // One of `choices`, case-sensitive.
  Options& choice(const std::string& name, std::string& value, const std::vector<std::string>& choices,
                  const std::string& help);
  Options& integer(const std::string& name, int64_t& value, const std::string& help, NumberRange range = {});
  Options& number(const std::string& name, double& value, const std::string& help, NumberRange range = {});
  // Comma-separated whole numbers >= 1 ("256,512,1024"); sizes_of() reads them.
  Options& size_list(const std::string& name, std::string& value, const std::string& help);
  Options& flag(const std::string& name, bool& value, const std::string& help);

 private:
  CLI::App* app_;
};

// The sizes of a list that Options::size_list accepted.
std::vector<int64_t> sizes_of(const std::string& list);

// Makes an empty value of `option` a usage error ("--out: an empty path is not a folder or a
// file"); returns `option`. Options' path methods and cli.h's own --config, --out, --resume use it.
CLI::Option* refuse_empty_path(CLI::Option* option);

// Parses argv into `app`: nullopt to go on, else the exit code (0 after --help; 2 after a usage
// error, printed as "<name>: error: ...\n(run '<name> --help' for <help_lists>)"). CommandLine
// and cli.h's AppCommandLine parse through it.
std::optional<int> parse_command_line(CLI::App& app, const std::string& name, const std::string& help_lists,
                                      int argc, const char* const* argv);

// A program's command line: its options, its subcommands, and parsing.
class CommandLine {
 public:
  enum Repeats { kRepeatIsError, kLaterOptionsWin };  // an option given twice: refused, or the last counts
  CommandLine(std::string name, std::string description, Repeats repeats = kRepeatIsError);
  ~CommandLine();

  Options& options() { return options_; }
  // A subcommand (`posgrad-data fetch ...`) with options of its own.
  Options command(const std::string& name, const std::string& description);
  // Exactly one subcommand must be named.
  void require_command();
  // After parse(): whether the subcommand `name` was named.
  bool got(const std::string& name) const;

  // nullopt: go on; otherwise the exit code main returns (see the header).
  std::optional<int> parse(int argc, const char* const* argv);

 private:
  std::string name_;
  std::unique_ptr<CLI::App> app_;
  Options options_;
};

}  // namespace posgrad::apps
