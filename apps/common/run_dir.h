// RunDir: the folder one run writes into.
//   <run>/config.yaml     every setting, resolved (defaults + presets + overrides); pass it back
//                         with --config to repeat the run
//   <run>/command.txt     the command lines that started (and resumed) the run
//   <run>/metrics.jsonl   one JSON object per log_metrics() call, one per line, flushed at once
//   <run>/summary.json    the final metrics, written atomically
//   <run>/figures/        PNG and SVG figures (figure_path)
//   <run>/checkpoints/    checkpoints (checkpoint_path; see run_checkpoints.h)
//   <run>/.lock           the lock of the process writing the run (folder_lock.h)
//   <run>/events.out.tfevents.*  TensorBoard event files (tensorboard_events.h): the metrics, the
//                         config and the figures (log_figures), one file per process that wrote
// Creating a RunDir on a folder that already holds files is an error unless the caller says
// Overwrite (start metrics.jsonl afresh, drop summary.json) or Append (continue metrics.jsonl,
// e.g. when resuming). A RunDir holds the folder's exclusive lock for as long as it lives, taken
// before anything in the folder is changed (before Overwrite removes the old run's files): a
// second RunDir on the same folder, in this process or another, throws naming the holder.
//
// Deliberately does not: write checkpoints, delete old figures or checkpoints, or rotate logs.
#pragma once

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/common/folder_lock.h"
#include "apps/common/settings.h"

namespace posgrad::apps {

struct TrainRequest;
class TensorboardEvents;

enum class ExistingRun {
  Refuse,     // a non-empty folder is an error (the default)
  Overwrite,  // reuse it: metrics.jsonl restarts empty, summary.json, checkpoints/ and the
              // TensorBoard event files are removed
  Append,     // reuse it: metrics.jsonl continues (resuming a run)
  Follow,     // another process writes it (rank 0 of a data-parallel run, data_parallel.h): the
              // folder must exist; no lock is taken and nothing is written (log_metrics,
              // write_*, log_figures, drop_metrics_after do nothing; read_metrics reads)
};

class RunDir {
 public:
  // Creates `dir` and its parents, and locks it.
  explicit RunDir(std::filesystem::path dir, ExistingRun existing = ExistingRun::Refuse);
  ~RunDir();
  RunDir(RunDir&& other) noexcept;
  RunDir& operator=(RunDir&& other) noexcept;
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  const std::filesystem::path& path() const { return dir_; }
  // False for a follower (ExistingRun::Follow): it writes nothing into the folder.
  bool writes() const { return writes_; }

  // config.yaml with every setting (atomically), and as the TensorBoard text "config"; `note`
  // (YAML comment lines, "# ...\n") goes first. Nothing is written when config.yaml already
  // holds exactly this text (a resume that changes nothing).
  void write_config(const Settings& settings, const std::string& note = "");
  // Appends `record` (a JSON object) as one line of metrics.jsonl and flushes. Adds "time_s"
  // (seconds since this RunDir was opened) unless the record has it. Non-finite numbers are
  // written as null. Example: run.log_metrics({{"step", 10}, {"loss", 0.3}, {"lr", 1e-3}}).
  // A record with a "step" also goes to TensorBoard: each of its numbers a scalar (scalar_fields).
  void log_metrics(const nlohmann::json& record);
  // Every PNG of figures/ into the TensorBoard events as an image "figures/<name>" at `step`.
  void log_figures(int64_t step);
  // The records of metrics.jsonl, in order (lines that do not parse are an error naming the line).
  std::vector<nlohmann::json> read_metrics() const;
  // Drops the records whose "step" is above `step` (what a killed run logged after its last
  // checkpoint), so a resumed run continues the file without repeating steps; TensorBoard is told
  // the same (a session START at step + 1).
  void drop_metrics_after(int64_t step);
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
  FolderLock lock_;  // released last, after metrics.jsonl is closed
  std::FILE* metrics_ = nullptr;
  std::chrono::steady_clock::time_point opened_;
  bool writes_ = true;
  std::unique_ptr<TensorboardEvents> events_;  // opened at the first event

  TensorboardEvents& events();
};

// Opens request.out_dir for a run: a new run (Overwrite with --overwrite, else Refuse) gets
// config.yaml and command.txt; a resumed run (Append) gets its command added to command.txt.
// A non-empty `note` (YAML comment lines) heads config.yaml, written again on resume (the data-
// parallel statement of data_parallel.h, which may change with the rank count).
RunDir open_run_dir(const TrainRequest& request, const Settings& settings, const std::string& note = "");

}  // namespace posgrad::apps
