// RunDir: the folder one run writes into.
//   <run>/config.yaml     the resolved config (defaults + overrides)
//   <run>/command.txt     the command line that started the run (when opened from a CommandLine)
//   <run>/metrics.jsonl   one JSON object per log_metrics() call, one per line, flushed at once
//   <run>/summary.json    the final metrics, written atomically
//   <run>/figures/        PNGs (figure_path)
//   <run>/checkpoints/    checkpoint files (checkpoint_path; written by nn/, not here)
// Creating a RunDir on a folder that already holds files is an error unless the caller says
// Overwrite (start metrics.jsonl afresh, drop summary.json) or Append (continue metrics.jsonl,
// e.g. when resuming).
//
// Deliberately does not: write checkpoints, delete old figures or checkpoints, or rotate logs.
#pragma once

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/common/config.h"

namespace posgrad::apps {

struct CommandLine;

enum class ExistingRun {
  Refuse,     // a non-empty folder is an error (the default)
  Overwrite,  // reuse it: metrics.jsonl restarts empty, summary.json is removed
  Append,     // reuse it: metrics.jsonl continues (resuming a run)
};

class RunDir {
 public:
  // Creates `dir` and its parents.
  explicit RunDir(std::filesystem::path dir, ExistingRun existing = ExistingRun::Refuse);
  ~RunDir();
  RunDir(RunDir&& other) noexcept;
  RunDir& operator=(RunDir&& other) noexcept;
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  const std::filesystem::path& path() const { return dir_; }

  // config.yaml with the resolved config (atomically).
  void write_config(const Config& config);
  // Appends `record` (a JSON object) as one line of metrics.jsonl and flushes. Adds "time_s"
  // (seconds since this RunDir was opened) unless the record has it. Non-finite numbers are
  // written as null. Example: run.log_metrics({{"step", 10}, {"loss", 0.3}, {"lr", 1e-3}}).
  void log_metrics(const nlohmann::json& record);
  // summary.json (atomically, pretty-printed).
  void write_summary(const nlohmann::json& summary);
  // Any other text file in the run folder (atomically); `name` may hold subfolders.
  void write_text(const std::string& name, const std::string& text);

  // <run>/figures/<name> (".png" added when `name` has no extension); creates figures/.
  std::filesystem::path figure_path(const std::string& name) const;
  // <run>/checkpoints/<name>; creates checkpoints/.
  std::filesystem::path checkpoint_path(const std::string& name) const;
  std::filesystem::path metrics_path() const { return dir_ / "metrics.jsonl"; }
  std::filesystem::path summary_path() const { return dir_ / "summary.json"; }
  std::filesystem::path config_path() const { return dir_ / "config.yaml"; }

  double seconds_since_open() const;

 private:
  std::filesystem::path dir_;
  std::FILE* metrics_ = nullptr;
  std::chrono::steady_clock::time_point opened_;
};

// Opens cl.out_dir (Overwrite when --overwrite was given, else Refuse) and writes config.yaml
// and command.txt into it.
RunDir open_run_dir(const CommandLine& cl);

}  // namespace posgrad::apps
