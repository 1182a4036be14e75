// Command line of an experiment executable:
//   app [--config FILE] [-Dkey.sub=value ...] [-D key=value] [--out DIR] [--overwrite] [--help]
// Loads the YAML defaults (configs/<app>.yaml unless --config says otherwise; a relative path is
// looked up in the current folder, then in the source tree), applies the -D overrides in order,
// and picks the run folder (runs/<app>/<date-time> unless --out says otherwise). app_main()
// wraps an app's main(): --help, and one "app: error: ..." line and exit 1 on posgrad::Error.
//
// Deliberately does not: create the run folder (see run_dir.h), accept positional arguments or
// abbreviations, or read environment variables.
#pragma once

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "apps/common/config.h"

namespace posgrad::apps {

struct CommandLine {
  std::string app_name;
  Config config;                       // defaults with the overrides applied
  std::filesystem::path config_path;   // the YAML file that was read
  std::vector<std::string> overrides;  // "key=value", in command-line order
  std::filesystem::path out_dir;       // the run folder (not created yet)
  bool out_dir_given = false;          // --out was given
  bool overwrite = false;              // --overwrite was given
  bool help = false;                   // --help was given and usage was printed: exit 0
  std::vector<std::string> args;       // argv as given, for the record
};

struct CommandLineOptions {
  // Where relative config paths are looked up when they are not in the current folder; empty
  // means the source tree this library was built from (POSGRAD_SOURCE_DIR).
  std::filesystem::path source_dir;
  std::FILE* help_stream = stdout;  // where --help prints; nullptr prints nothing
  std::string description;          // a line about the app, printed by --help
};

// The source tree the app kit was built from ("" when unknown).
std::filesystem::path source_dir();

// Parses argv. `default_config_path` empty means "configs/<app_name>.yaml". Throws
// posgrad::Error on an unknown argument, a missing value, a missing config file, an unknown
// config key or a bad value. With --help: prints usage and every config key with its type and
// default, and returns with help = true (the config is then not checked beyond loading).
CommandLine parse_command_line(int argc, const char* const* argv, const std::string& app_name,
                               const std::filesystem::path& default_config_path = {},
                               const CommandLineOptions& options = {});

// The usage text --help prints (the key listing needs a loaded config; pass nullptr to skip).
std::string usage_text(const std::string& app_name, const std::filesystem::path& default_config,
                       const Config* config, const std::string& description = "");

// Runs `body` with the parsed command line. Returns 0 on success or --help, and 1 after
// printing "<app>: error: <message>" to stderr when anything throws. After a successful run it
// prints a note naming the config keys the app never read (Config::unused_keys).
int app_main(int argc, const char* const* argv, const std::string& app_name,
             const std::function<void(const CommandLine&)>& body,
             const std::filesystem::path& default_config_path = {},
             const CommandLineOptions& options = {});

}  // namespace posgrad::apps
