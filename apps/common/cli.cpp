// Command line: see cli.h.
#include "apps/common/cli.h"

#include <ctime>
#include <exception>
#include <string_view>

#include <fmt/format.h>

#include "tensor/error.h"

namespace posgrad::apps {

namespace fs = std::filesystem;

fs::path source_dir() {
#ifdef POSGRAD_SOURCE_DIR
  return fs::path(POSGRAD_SOURCE_DIR);
#else
  return {};
#endif
}

namespace {

// A relative path: the current folder first, then the source tree.
fs::path resolve_config(const fs::path& path, const fs::path& src) {
  std::error_code ec;
  if (path.is_absolute() || fs::is_regular_file(path, ec)) {
    POSGRAD_CHECK(fs::is_regular_file(path, ec), "config file '{}' does not exist",
                  path.string());
    return path;
  }
  if (!src.empty() && fs::is_regular_file(src / path, ec)) return src / path;
  fail("config file '{}' not found in the current folder ({}){}", path.string(),
       fs::current_path().string(),
       src.empty() ? std::string() : fmt::format(" nor in the source tree ({})", src.string()));
}

std::string timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &local);
  return buf;
}

// runs/<app>/<date-time>, with -2, -3 ... appended when two runs start in the same second.
fs::path default_out_dir(const std::string& app) {
  const fs::path base = fs::path("runs") / app / timestamp();
  fs::path candidate = base;
  std::error_code ec;
  for (int i = 2; fs::exists(candidate, ec); ++i) candidate = base.string() + "-" + std::to_string(i);
  return candidate;
}

}  // namespace

std::string usage_text(const std::string& app, const fs::path& default_config, const Config* config,
                       const std::string& description) {
  std::string out = fmt::format(
      "usage: {} [--config FILE] [-Dkey=value ...] [--out DIR] [--overwrite] [--help]\n", app);
  if (!description.empty()) out += "\n" + description + "\n";
  out += fmt::format(
      "\n"
      "  --config FILE   YAML file of defaults (default: {})\n"
      "  -Dkey=value     set one config key, parsed to the key's type; repeatable;\n"
      "                  also -D key=value. Lists as -Dkey=[1,2,3] or -Dkey=1,2,3\n"
      "  --out DIR       run folder (default: runs/{}/<date-time>)\n"
      "  --overwrite     write into a run folder that already holds files\n"
      "  --help          print this text\n",
      default_config.string(), app);
  if (config) {
    out += fmt::format("\nconfig keys (key, type, default) from {}:\n", config->source());
    out += config->describe(true);
  }
  return out;
}

CommandLine parse_command_line(int argc, const char* const* argv, const std::string& app_name,
                               const fs::path& default_config_path,
                               const CommandLineOptions& options) {
  CommandLine cl;
  cl.app_name = app_name;
  for (int i = 0; i < argc; ++i) cl.args.emplace_back(argv[i] ? argv[i] : "");

  const fs::path default_config = default_config_path.empty()
                                      ? fs::path("configs") / (app_name + ".yaml")
                                      : default_config_path;
  fs::path config_arg;
  bool config_given = false;

  // The value of "--opt VALUE" or "--opt=VALUE".
  auto take_value = [&](int& i, std::string_view arg, std::string_view name) -> std::string {
    if (arg.size() > name.size() && arg[name.size()] == '=')
      return std::string(arg.substr(name.size() + 1));
    POSGRAD_CHECK(i + 1 < argc, "{}: {} needs a value (see --help)", app_name, name);
    return std::string(cl.args[++i]);
  };
  auto is_option = [](std::string_view arg, std::string_view name) {
    return arg == name || (arg.size() > name.size() && arg.substr(0, name.size()) == name &&
                           arg[name.size()] == '=');
  };

  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = cl.args[i];
    if (arg == "--help" || arg == "-h") {
      cl.help = true;
    } else if (is_option(arg, "--config")) {
      POSGRAD_CHECK(!config_given, "{}: --config given twice", app_name);
      config_arg = take_value(i, arg, "--config");
      POSGRAD_CHECK(!config_arg.empty(), "{}: --config needs a file name", app_name);
      config_given = true;
    } else if (is_option(arg, "--out")) {
      POSGRAD_CHECK(!cl.out_dir_given, "{}: --out given twice", app_name);
      cl.out_dir = take_value(i, arg, "--out");
      POSGRAD_CHECK(!cl.out_dir.empty(), "{}: --out needs a folder name", app_name);
      cl.out_dir_given = true;
    } else if (arg == "--overwrite") {
      cl.overwrite = true;
    } else if (arg == "-D") {
      POSGRAD_CHECK(i + 1 < argc, "{}: -D needs key=value after it", app_name);
      cl.overrides.push_back(cl.args[++i]);
    } else if (arg.size() > 2 && arg.substr(0, 2) == "-D") {
      cl.overrides.emplace_back(arg.substr(2));
    } else {
      fail("{}: unknown argument '{}'. Expected --config FILE, -Dkey=value, --out DIR, "
           "--overwrite or --help",
           app_name, arg);
    }
  }
  for (const std::string& o : cl.overrides)
    POSGRAD_CHECK(o.find('=') != std::string::npos,
                  "{}: override '-D{}' has no '='; write it as -Dkey.sub=value", app_name, o);

  const fs::path src = options.source_dir.empty() ? source_dir() : options.source_dir;
  if (cl.help) {
    // Print the usage even when the config cannot be loaded; say why below it.
    std::string text;
    try {
      cl.config_path = resolve_config(config_given ? config_arg : default_config, src);
      cl.config = Config::load(cl.config_path);
      text = usage_text(app_name, default_config, &cl.config, options.description);
    } catch (const Error& e) {
      text = usage_text(app_name, default_config, nullptr, options.description) +
             fmt::format("\n(cannot list the config keys: {})\n", e.what());
    }
    if (options.help_stream) {
      std::fputs(text.c_str(), options.help_stream);
      std::fflush(options.help_stream);
    }
    return cl;
  }

  cl.config_path = resolve_config(config_given ? config_arg : default_config, src);
  cl.config = Config::load(cl.config_path);
  for (const std::string& o : cl.overrides) cl.config.apply_override(o);
  if (!cl.out_dir_given) cl.out_dir = default_out_dir(app_name);
  return cl;
}

int app_main(int argc, const char* const* argv, const std::string& app_name,
             const std::function<void(const CommandLine&)>& body,
             const fs::path& default_config_path, const CommandLineOptions& options) {
  try {
    const CommandLine cl = parse_command_line(argc, argv, app_name, default_config_path, options);
    if (cl.help) return 0;
    body(cl);
    // Settings the app never looked at are usually typos in the YAML or dead options.
    const std::vector<std::string> unused = cl.config.unused_keys();
    if (!unused.empty()) {
      std::string list;
      for (const std::string& k : unused) list += (list.empty() ? "" : ", ") + k;
      std::fprintf(stderr, "%s: note: config keys never read: %s\n", app_name.c_str(), list.c_str());
    }
    return 0;
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", app_name.c_str(), e.what());
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error (%s)\n", app_name.c_str(), e.what());
  }
  return 1;
}

}  // namespace posgrad::apps
