// The command line of an experiment executable, on CLI11:
//
//   app [train] [--config FILE]... [-Dkey=value]... [--out DIR] [--overwrite]
//   app [train] --resume RUN_DIR
//   app <job> ...                        (jobs the app adds: eval, sample, ...)
//   app [--config FILE]... [-Dkey=value]... <job> ... [--config FILE]... [-Dkey=value]...
//                                        (a job that reads a run's settings: job_settings.h)
//   app --help                           (every option, then every setting: type, default, help)
//
// The settings of a training run are, in order: the app's declared defaults (settings.h), each
// --config preset (a relative path is looked up in the current folder, then in the source tree),
// each -D override. --resume RUN_DIR instead reads RUN_DIR/config.yaml and continues that run in
// that folder (it cannot be combined with --config or -D: a resumed run keeps its settings).
// Without --out the run folder is runs/<app>/<date-time>.
// Another job takes --config and -D, before or after its name, only when it was added with a
// JobSettings body (it applies them itself, over the settings of the run it reads); any other
// job refuses them, and every job refuses --out, --overwrite and --resume (training's options).
//
// An empty path ("--out ''", "--resume \"$UNSET\"") is a usage error, never read as "not given":
// every path option of the apps and of posgrad-sweep is declared as a path (options.h).
//
// run() parses, resolves the settings and runs the chosen job. A usage error prints one
// "app: error: ..." line and returns 2; a posgrad::Error thrown by the job prints one
// "app: error: ..." line and returns 1; --help returns 0. In a data-parallel run of several ranks
// (data_parallel.h) the error line names the rank ("app (rank 1 of 2): error: ...") and the whole
// run ends there (MPI_Abort), so no other rank waits for it. The jobs other than train refuse
// --out, --overwrite and --resume (they write no run folder).
//
// Deliberately does not: create the run folder (run_dir.h), read environment variables, or
// accept abbreviated options.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apps/common/job_settings.h"
#include "apps/common/options.h"
#include "apps/common/settings.h"

namespace posgrad::apps {

// What the command line asked of the training job.
struct TrainRequest {
  std::filesystem::path out_dir;           // the run folder (created by open_run_dir)
  bool overwrite = false;                  // --overwrite: reuse a folder that holds files
  bool resume = false;                     // --resume: continue the run in out_dir
  std::vector<std::filesystem::path> presets;  // the --config files, resolved, in order
  std::vector<std::string> overrides;      // the -D assignments, in order
  std::string command;                     // the command line, shell-quoted, for the record
};

// The source tree the app kit was built from ("" when unknown).
std::filesystem::path source_dir();
// A preset path as given: the current folder first, then the source tree. Throws when neither has it.
std::filesystem::path resolve_preset(const std::filesystem::path& path);
// Reads RUN_DIR/config.yaml into `settings` (for --resume and for jobs that use a finished run).
void load_run_settings(Settings& settings, const std::filesystem::path& run_dir);
// argv as one shell-quoted line.
std::string quoted_command(int argc, const char* const* argv);

class AppCommandLine {
 public:
  AppCommandLine(std::string name, std::string description, Settings& settings);
  ~AppCommandLine();

  // The training job; it runs when no job is named, or with `app train`.
  void on_train(std::function<void(const TrainRequest&)> body);
  // Another job: `app <name> ...`. Declare its options on the returned Options before run().
  Options add_job(const std::string& name, const std::string& description, std::function<void()> body);
  // A job that takes settings: the --config files (resolved) and -D assignments given before or
  // after its name reach `body`, which applies them (apply_job_settings).
  Options add_job(const std::string& name, const std::string& description,
                  std::function<void(const JobSettings&)> body);

  int run(int argc, const char* const* argv);

 private:
  std::string name_;
  Settings& settings_;
  std::unique_ptr<CLI::App> app_;
  CLI::App* train_ = nullptr;
  std::function<void(const TrainRequest&)> train_body_;
  struct Job {
    CLI::App* app;
    std::function<void(const JobSettings&)> body;
    bool takes_settings;
  };
  std::vector<Job> jobs_;
  std::vector<std::string> presets_, overrides_;
  std::string out_, resume_;
  bool overwrite_ = false;
};

}  // namespace posgrad::apps
