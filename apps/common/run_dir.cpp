// RunDir: see run_dir.h.
#include "apps/common/run_dir.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "nn/atomic_file.h"
#include "apps/common/cli.h"
#include "apps/common/tensorboard_events.h"
#include "tensor/error.h"

namespace posgrad::apps {

namespace fs = std::filesystem;

namespace {

void make_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  POSGRAD_CHECK(!ec, "cannot create folder '{}': {}", dir.string(), ec.message());
}

}  // namespace

RunDir::RunDir(fs::path dir, ExistingRun existing)
    : dir_(std::move(dir)), opened_(std::chrono::steady_clock::now()) {
  POSGRAD_CHECK(!dir_.empty(), "run folder: empty path");
  std::error_code ec;
  if (existing == ExistingRun::Follow) {
    POSGRAD_CHECK(fs::is_directory(dir_, ec), "run folder '{}' does not exist (rank 0 makes it before the others follow)",
                  dir_.string());
    writes_ = false;
    return;
  }
  if (fs::exists(dir_, ec)) {
    POSGRAD_CHECK(fs::is_directory(dir_, ec), "run folder '{}' exists and is not a folder",
                  dir_.string());
    if (existing == ExistingRun::Refuse) {
      std::vector<std::string> names;  // what the folder holds, less a lock file a dead run left
      for (const auto& item : fs::directory_iterator(dir_, ec))
        if (item.path().filename() != FolderLock::kFileName) names.push_back(item.path().filename().string());
      if (!names.empty()) {
        std::string listing;
        for (size_t i = 0; i < names.size() && i < 5; ++i) listing += (i ? ", " : "") + names[i];
        if (names.size() > 5) listing += ", ...";
        fail("run folder '{}' already exists and holds files ({}); choose another --out or pass "
             "--overwrite",
             dir_.string(), listing);
      }
    }
  }
  make_dirs(dir_);
  // Before anything in the folder changes: a second writer must find it locked, not half removed.
  lock_ = FolderLock(dir_, "run folder");
  if (existing == ExistingRun::Overwrite) {
    // A new run in an old folder: the old run's summary and checkpoints must not be taken for
    // this run's (a later --resume would continue the old run).
    fs::remove(summary_path(), ec);
    fs::remove_all(dir_ / "checkpoints", ec);
    remove_event_files(dir_);
  }
  const char* mode = existing == ExistingRun::Append ? "a" : "w";
  metrics_ = std::fopen(metrics_path().c_str(), mode);
  POSGRAD_CHECK(metrics_ != nullptr, "cannot open '{}': {}", metrics_path().string(),
                std::strerror(errno));
}

RunDir::~RunDir() {
  if (metrics_) std::fclose(metrics_);
}

RunDir::RunDir(RunDir&& other) noexcept
    : dir_(std::move(other.dir_)), lock_(std::move(other.lock_)), metrics_(std::exchange(other.metrics_, nullptr)),
      opened_(other.opened_), writes_(other.writes_), events_(std::move(other.events_)) {}

RunDir& RunDir::operator=(RunDir&& other) noexcept {
  if (this != &other) {
    if (metrics_) std::fclose(metrics_);
    dir_ = std::move(other.dir_);
    lock_ = std::move(other.lock_);
    metrics_ = std::exchange(other.metrics_, nullptr);
    opened_ = other.opened_;
    writes_ = other.writes_;
    events_ = std::move(other.events_);
  }
  return *this;
}

double RunDir::seconds_since_open() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - opened_).count();
}

TensorboardEvents& RunDir::events() {
  if (!events_) events_ = std::make_unique<TensorboardEvents>(dir_);
  return *events_;
}

void RunDir::write_config(const Settings& settings, const std::string& note) {
  if (!writes_) return;
  const std::string yaml = note + settings.to_yaml();
  // A resume that changes nothing (same settings, same rank count) leaves config.yaml and the
  // TensorBoard text as they are, so the run shows its config once.
  if (fs::exists(config_path())) {
    std::ifstream in(config_path(), std::ios::binary);
    std::stringstream current;
    current << in.rdbuf();
    if (current.str() == yaml) return;
  }
  write_file_atomically(config_path(), yaml);
  events().text("config", 0, markdown_code_block(yaml));
}

void RunDir::log_figures(int64_t step) {
  if (writes_) events().figures(dir_ / "figures", step);
}

std::vector<nlohmann::json> RunDir::read_metrics() const {
  if (metrics_) std::fflush(metrics_);
  std::ifstream in(metrics_path());
  std::vector<nlohmann::json> records;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.empty()) continue;
    try {
      records.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception&) {
      // A process killed in the middle of a write leaves a partial last line: drop it.
      if (in.peek() == EOF) break;
      fail("'{}' line {} is not JSON: {}", metrics_path().string(), line_number, line);
    }
  }
  return records;
}

void RunDir::drop_metrics_after(int64_t step) {
  if (!writes_) return;
  std::string kept;
  for (const nlohmann::json& r : read_metrics())
    if (!(r.contains("step") && r["step"].is_number() && r["step"].get<int64_t>() > step)) kept += r.dump() + "\n";
  std::fclose(metrics_);
  metrics_ = nullptr;
  write_file_atomically(metrics_path(), kept);
  metrics_ = std::fopen(metrics_path().c_str(), "a");
  POSGRAD_CHECK(metrics_ != nullptr, "cannot open '{}': {}", metrics_path().string(), std::strerror(errno));
  events().session_start(step + 1);
}

void RunDir::log_metrics(const nlohmann::json& record) {
  POSGRAD_CHECK(record.is_object(), "log_metrics: the record must be a JSON object, got {}",
                record.dump());
  if (!writes_) return;
  POSGRAD_CHECK(metrics_ != nullptr, "log_metrics: the run folder was moved from");
  nlohmann::json written = record;
  if (!written.contains("time_s")) written["time_s"] = std::round(seconds_since_open() * 1000.0) / 1000.0;
  const std::string line = written.dump() + '\n';
  const bool ok = std::fwrite(line.data(), 1, line.size(), metrics_) == line.size() &&
                  std::fflush(metrics_) == 0;
  POSGRAD_CHECK(ok, "cannot write '{}': {}", metrics_path().string(), std::strerror(errno));
  if (written.contains("step") && written["step"].is_number_integer())
    events().scalars(written["step"].get<int64_t>(), scalar_fields(written));
}

void RunDir::write_summary(const nlohmann::json& summary) {
  if (!writes_) return;
  write_file_atomically(summary_path(), summary.dump(2) + "\n");
}

void RunDir::write_text(const std::string& name, const std::string& text) {
  POSGRAD_CHECK(!name.empty() && fs::path(name).is_relative(),
                "write_text: '{}' must be a relative name inside the run folder", name);
  if (!writes_) return;
  const fs::path path = dir_ / name;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  POSGRAD_CHECK(!ec, "cannot create folder '{}': {}", path.parent_path().string(), ec.message());
  write_file_atomically(path, text);
}

fs::path RunDir::figure_path(const std::string& name) const {
  POSGRAD_CHECK(!name.empty(), "figure_path: empty name");
  fs::path p = dir_ / "figures" / name;
  if (!p.has_extension()) p += ".png";
  make_dirs(p.parent_path());
  return p;
}

fs::path RunDir::checkpoint_path(const std::string& name) const {
  POSGRAD_CHECK(!name.empty(), "checkpoint_path: empty name");
  fs::path p = dir_ / "checkpoints" / name;
  make_dirs(p.parent_path());
  return p;
}

RunDir open_run_dir(const TrainRequest& request, const Settings& settings, const std::string& note) {
  if (request.resume) {
    RunDir run(request.out_dir, ExistingRun::Append);
    if (!note.empty()) run.write_config(settings, note);
    std::ifstream old(run.path() / "command.txt");
    std::stringstream history;
    history << old.rdbuf();
    run.write_text("command.txt", history.str() + request.command + "\n");
    return run;
  }
  RunDir run(request.out_dir, request.overwrite ? ExistingRun::Overwrite : ExistingRun::Refuse);
  run.write_config(settings, note);
  run.write_text("command.txt", request.command + "\n");
  return run;
}

}  // namespace posgrad::apps
