// Options and CommandLine on CLI11: see options.h.
#include "apps/common/options.h"

#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tensor/parse_text.h"

namespace posgrad::apps {

namespace {

// The value must read as a number inside `range` (NaN and, unless allowed, infinities refused).
CLI::Validator number_in(const NumberRange& range) {
  const std::string bounds = range.text();
  return CLI::Validator(
      [range](std::string& input) -> std::string {
        const std::optional<double> value = parse_double(input);
        if (!value) return fmt::format("'{}' is not a number", input);
        return range.violation(*value);
      },
      bounds.empty() ? "finite" : bounds, "");
}

}  // namespace

CLI::Option* refuse_empty_path(CLI::Option* option) {
  return option->check(CLI::Validator(
      [](std::string& value) {
        return value.empty() ? std::string("an empty path is not a folder or a file") : std::string();
      },
      "", "non-empty"));
}

Options& Options::path(const std::string& name, std::string& value, const std::string& help) {
  refuse_empty_path(app_->add_option(name, value, help));
  return *this;
}

Options& Options::required_path(const std::string& name, std::string& value, const std::string& help) {
  refuse_empty_path(app_->add_option(name, value, help))->required();
  return *this;
}

Options& Options::existing_file(const std::string& name, std::string& value, const std::string& help) {
  refuse_empty_path(app_->add_option(name, value, help))->check(CLI::ExistingFile);
  return *this;
}

Options& Options::text(const std::string& name, std::string& value, const std::string& help) {
  app_->add_option(name, value, help)->capture_default_str();
  return *this;
}

Options& Options::non_empty_text(const std::string& name, std::string& value, const std::string& help) {
  app_->add_option(name, value, help)
      ->check(CLI::Validator(
          [](std::string& given) {
            return given.empty() ? std::string("empty (leave the option out for the default)") : std::string();
          },
          "", "non-empty"));
  return *this;
}

Options& Options::texts(const std::string& name, std::vector<std::string>& values, const std::string& help,
                        bool required) {
  app_->add_option(name, values, help)->required(required);
  return *this;
}

Options& Options::choice(const std::string& name, std::string& value, const std::vector<std::string>& choices,
                         const std::string& help) {
  const std::string listed = fmt::format("{}", fmt::join(choices, ", "));
  app_->add_option(name, value, help)
      ->check(CLI::Validator(
          [choices, listed](std::string& given) {
            for (const std::string& c : choices)
              if (given == c) return std::string();
            return fmt::format("'{}' is not one of {}", given, listed);
          },
          "{" + fmt::format("{}", fmt::join(choices, ",")) + "}", ""))
      ->capture_default_str();
  return *this;
}

Options& Options::integer(const std::string& name, int64_t& value, const std::string& help, NumberRange range) {
  CLI::Option* option = app_->add_option(name, value, help)->check(number_in(range));
  if (range.violation(static_cast<double>(value)).empty()) option->capture_default_str();  // not "[0]" for "not given"
  return *this;
}

Options& Options::number(const std::string& name, double& value, const std::string& help, NumberRange range) {
  app_->add_option(name, value, help)->check(number_in(range))->capture_default_str();
  return *this;
}

Options& Options::size_list(const std::string& name, std::string& value, const std::string& help) {
  app_->add_option(name, value, help)
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            for (size_t start = 0; start <= text.size();) {
              const size_t comma = std::min(text.find(',', start), text.size());
              const std::string item = text.substr(start, comma - start);
              if (item.empty() || item.size() > 18 || item.find_first_not_of("0123456789") != std::string::npos ||
                  std::stoll(item) < 1)
                return "each size must be a whole number >= 1, not '" + item + "' in '" + text + "'";
              start = comma + 1;
            }
            return std::string();
          },
          "N,N,...", "size_list"))
      ->capture_default_str();
  return *this;
}

Options& Options::flag(const std::string& name, bool& value, const std::string& help) {
  app_->add_flag(name, value, help);
  return *this;
}

std::vector<int64_t> sizes_of(const std::string& list) {
  std::vector<int64_t> sizes;
  for (size_t start = 0; start <= list.size();) {
    const size_t comma = std::min(list.find(',', start), list.size());
    sizes.push_back(std::stoll(list.substr(start, comma - start)));
    start = comma + 1;
  }
  return sizes;
}

CommandLine::CommandLine(std::string name, std::string description, Repeats repeats)
    : name_(std::move(name)),
      app_(std::make_unique<CLI::App>(std::move(description), name_)),
      options_(*app_) {
  if (repeats == kLaterOptionsWin) app_->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

CommandLine::~CommandLine() = default;

Options CommandLine::command(const std::string& name, const std::string& description) {
  return Options(*app_->add_subcommand(name, description));
}

void CommandLine::require_command() { app_->require_subcommand(1); }

bool CommandLine::got(const std::string& name) const { return app_->got_subcommand(name); }

std::optional<int> parse_command_line(CLI::App& app, const std::string& name, const std::string& help_lists,
                                      int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s\n(run '%s --help' for %s)\n", name.c_str(), e.what(), name.c_str(),
                 help_lists.c_str());
    return 2;
  }
  return std::nullopt;
}

std::optional<int> CommandLine::parse(int argc, const char* const* argv) {
  return parse_command_line(*app_, name_, "the options", argc, argv);
}

}  // namespace posgrad::apps
