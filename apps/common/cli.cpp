// The command line: see cli.h.
#include "apps/common/cli.h"

#include <cstdio>
#include <ctime>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "distributed/process_group.h"
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

fs::path resolve_preset(const fs::path& path) {
  std::error_code ec;
  if (path.is_absolute() || fs::is_regular_file(path, ec)) {
    POSGRAD_CHECK(fs::is_regular_file(path, ec), "settings file '{}' does not exist", path.string());
    return path;
  }
  const fs::path src = source_dir();
  if (!src.empty() && fs::is_regular_file(src / path, ec)) return src / path;
  fail("settings file '{}' not found in the current folder ({}){}", path.string(), fs::current_path().string(),
       src.empty() ? std::string() : fmt::format(" nor in the source tree ({})", src.string()));
}

void load_run_settings(Settings& settings, const fs::path& run_dir) {
  const fs::path config = run_dir / "config.yaml";
  std::error_code ec;
  POSGRAD_CHECK(fs::is_regular_file(config, ec), "'{}' is not a run folder: it has no config.yaml",
                run_dir.string());
  settings.load_yaml_file(config);
}

std::string quoted_command(int argc, const char* const* argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i] ? argv[i] : "";
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789-_./=:,+@%[]") == std::string::npos;
    std::string q = a;
    if (!plain) {
      q = "'";
      for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      q += "'";
    }
    line += (i ? " " : "") + q;
  }
  return line;
}

namespace {

// runs/<app>/<date-time>, with -2, -3 ... when two runs start in the same second.
fs::path default_out_dir(const std::string& app) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  const fs::path base = fs::path("runs") / app / stamp;
  fs::path candidate = base;
  std::error_code ec;
  for (int i = 2; fs::exists(candidate, ec); ++i) candidate = base.string() + "-" + std::to_string(i);
  return candidate;
}

}  // namespace

AppCommandLine::AppCommandLine(std::string name, std::string description, Settings& settings)
    : name_(std::move(name)), settings_(settings), app_(std::make_unique<CLI::App>(std::move(description), name_)) {
  refuse_empty_path(app_->add_option("--config", presets_, "YAML preset applied over the defaults (repeatable, in order)"))
      ->type_name("FILE");
  app_->add_option("-D", overrides_, "set one setting, e.g. -Dtrain.lr=1e-3 (repeatable; later wins)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  refuse_empty_path(app_->add_option("--out", out_, "run folder (default: runs/" + name_ + "/<date-time>)"))->type_name("DIR");
  app_->add_flag("--overwrite", overwrite_, "write into a run folder that already holds files");
  refuse_empty_path(app_->add_option("--resume", resume_, "continue the run in RUN_DIR from its latest checkpoint"))
      ->type_name("RUN_DIR");
  app_->footer("Settings (set with -Dkey=value or in a --config YAML file):\n" + settings_.describe());
  app_->require_subcommand(0, 1);
}

AppCommandLine::~AppCommandLine() = default;

void AppCommandLine::on_train(std::function<void(const TrainRequest&)> body) {
  train_ = app_->add_subcommand("train", "train a model (the default job)");
  train_->fallthrough();  // its options are the app's: `app train -Dk=v` == `app -Dk=v`
  train_body_ = std::move(body);
}

Options AppCommandLine::add_job(const std::string& name, const std::string& description, std::function<void()> body) {
  CLI::App* job = app_->add_subcommand(name, description);
  jobs_.push_back({job, [body = std::move(body)](const JobSettings&) { body(); }, false});
  return Options(*job);
}

Options AppCommandLine::add_job(const std::string& name, const std::string& description,
                                std::function<void(const JobSettings&)> body) {
  CLI::App* job = app_->add_subcommand(name, description);
  job->fallthrough();  // --config and -D after the job's name are the app's options
  jobs_.push_back({job, std::move(body), true});
  return Options(*job);
}

namespace {

// " (rank 1 of 2)" in a data-parallel run, else "".
std::string rank_label() {
  const distributed::ProcessGroup* world = distributed::world_if_started();
  if (!world || world->size() == 1) return "";
  return " (rank " + std::to_string(world->rank()) + " of " + std::to_string(world->size()) + ")";
}

}  // namespace

int AppCommandLine::run(int argc, const char* const* argv) {
  if (const auto exit_code = parse_command_line(*app_, name_, "the options and settings", argc, argv))
    return *exit_code;
  try {
    for (const Job& job : jobs_) {
      if (!job.app->parsed()) continue;
      const std::string& job_name = job.app->get_name();
      if (!out_.empty() || overwrite_ || !resume_.empty())
        fail("--out, --overwrite and --resume are options of training; the {} job writes no run folder of its own",
             job_name);
      JobSettings given;
      if (!job.takes_settings && (!presets_.empty() || !overrides_.empty()))
        fail("{} takes no --config or -D: it reads the settings of the run it uses", job_name);
      for (const std::string& p : presets_) given.presets.push_back(resolve_preset(p));
      given.overrides = overrides_;
      job.body(given);
      return 0;
    }
    POSGRAD_CHECK(train_body_, "{}: no job to run", name_);
    TrainRequest request;
    request.command = quoted_command(argc, argv);
    request.overwrite = overwrite_;
    if (!resume_.empty()) {
      if (!presets_.empty() || !overrides_.empty() || !out_.empty())
        fail("--resume continues a run with the settings in its config.yaml and in its own folder; "
             "it cannot be combined with --config, -D or --out");
      request.resume = true;
      request.out_dir = resume_;
      load_run_settings(settings_, request.out_dir);
    } else {
      for (const std::string& p : presets_) {
        request.presets.push_back(resolve_preset(p));
        settings_.load_yaml_file(request.presets.back());
      }
      for (const std::string& o : overrides_) settings_.apply_override(o);
      request.overrides = overrides_;
      request.out_dir = out_.empty() ? default_out_dir(name_) : fs::path(out_);
    }
    train_body_(request);
    return 0;
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s%s: error: %s\n", name_.c_str(), rank_label().c_str(), e.what());
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s%s: error (%s)\n", name_.c_str(), rank_label().c_str(), e.what());
  }
  // A rank of a data-parallel run that fails ends the others, which would otherwise wait for it
  // in their next collective (data_parallel.h).
  if (distributed::ProcessGroup* world = distributed::world_if_started(); world && world->size() > 1) {
    std::fflush(stderr);
    world->abort(1);
  }
  return 1;
}

}  // namespace posgrad::apps
