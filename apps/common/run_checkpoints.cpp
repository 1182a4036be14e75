// RunCheckpoints: see run_checkpoints.h.
#include "apps/common/run_checkpoints.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_EXCHANGE (glibc 2.28)

#include <fmt/format.h>

#include "apps/common/run_dir.h"
#include "nn/atomic_file.h"
#include "nn/checkpoint.h"
#include "tensor/error.h"

namespace posgrad::apps {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPartial = ".partial";
constexpr const char* kTrash = ".trash";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Removes a step folder so that no half-deleted folder keeps its step name: renames it to
// <name>.trash, then deletes that.
void remove_step_folder(const fs::path& folder) {
  std::error_code ec;
  const fs::path trash = folder.string() + kTrash;
  fs::remove_all(trash, ec);
  fs::rename(folder, trash, ec);
  if (ec) fail("cannot remove the checkpoint folder '{}': renaming it to '{}' failed: {}", folder.string(),
               trash.string(), ec.message());
  fs::remove_all(trash, ec);
}

}  // namespace

std::string step_folder_name(int64_t step) { return fmt::format("step-{:09d}", step); }

std::optional<int64_t> step_of_folder_name(const std::string& name) {
  if (name.rfind("step-", 0) != 0 || name.size() == 5) return std::nullopt;
  int64_t step = 0;
  const char* begin = name.data() + 5;
  const char* end = name.data() + name.size();
  const auto [ptr, ec] = std::from_chars(begin, end, step);
  if (ec != std::errc() || ptr != end || step < 0 || *begin == '-' || *begin == '+') return std::nullopt;
  return step;
}

std::optional<fs::path> read_checkpoint_pointer(const fs::path& checkpoints_dir, const std::string& pointer) {
  const fs::path file = checkpoints_dir / pointer;
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  std::string name = read_file_bytes(file);
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r' || name.back() == ' ')) name.pop_back();
  // Only a bare step folder name: never a path (into another run, or up with ".."). The content is
  // shown escaped, so a NUL byte or a control character cannot cut or garble the error line.
  POSGRAD_CHECK(step_of_folder_name(name).has_value(),
                "checkpoint pointer '{}' is corrupt: it holds {:?}, not the name of a step folder of this run",
                file.string(), name);
  return checkpoints_dir / name;
}

fs::path run_checkpoint_folder(const fs::path& run_dir, const std::string& which) {
  const fs::path checkpoints = run_dir / "checkpoints";
  const std::optional<fs::path> folder = read_checkpoint_pointer(checkpoints, which);
  if (!folder)
    fail("run folder '{}' has no '{}' checkpoint: '{}' does not exist (is it a run folder, and has the run saved a "
         "checkpoint yet?)",
         run_dir.string(), which, (checkpoints / which).string());
  std::error_code ec;
  POSGRAD_CHECK(fs::is_directory(fs::symlink_status(*folder, ec)),
                "checkpoint pointer '{}' names '{}', which is not a step folder of this run (missing, or a link)",
                (checkpoints / which).string(), folder->filename().string());
  return *folder;
}

RunCheckpoints::RunCheckpoints(const RunDir& run, Module& model, Optimizer& optimizer, Generator& generator,
                               Options options)
    : dir_(run.path() / "checkpoints"), model_(model), optimizer_(optimizer), generator_(generator),
      options_(std::move(options)), writes_(run.writes()) {
  if (writes_) fs::create_directories(dir_);
}

fs::path RunCheckpoints::pointer_target(const char* pointer) const {
  return read_checkpoint_pointer(dir_, pointer).value_or(fs::path());
}

fs::path RunCheckpoints::latest_path() const { return pointer_target("latest"); }
fs::path RunCheckpoints::best_path() const { return pointer_target("best"); }

void RunCheckpoints::write_step(const TrainingPosition& at) {
  Checkpoint ck;
  ck.step = at.step;
  ck.model = model_.state_dict();
  ck.optimizer = optimizer_.state();
  ck.rng_seed = generator_.seed();
  ck.rng_offset = generator_.offset();
  ck.tensor_files = at.tensor_files;
  nlohmann::json state{{"epoch", at.epoch}, {"batch_in_epoch", at.batch_in_epoch}, {"extra", at.extra}};
  if (best_) state["best"] = {{"metric", options_.metric}, {"value", *best_}, {"step", best_step_}};
  ck.extra_json = state.dump();

  // Written under a temporary name, renamed into place once complete: a folder named step-<N>
  // is always a whole checkpoint.
  const std::string name = step_folder_name(at.step);
  const fs::path folder = dir_ / name, partial = dir_ / (name + kPartial);
  std::error_code ec;
  fs::remove_all(partial, ec);  // left by a crash during an earlier save of this step
  try {
    save_checkpoint(partial, ck);
  } catch (const Error& e) {
    fs::remove_all(partial, ec);
    fail("cannot save the checkpoint of step {} in '{}': {}", at.step, dir_.string(), e.what());
  }
  // Saving a step again (a second save of one step, a best found at a step a killed run had
  // saved, a folder a crash left unnamed by any pointer): the two folders swap names in one
  // atomic rename, so a pointer to step-<N> never dangles, and the old one is removed. Where the
  // filesystem cannot swap, the old folder goes first: a crash between the two renames leaves
  // the name missing for a moment, and restore falls back to the previous checkpoint.
  if (fs::exists(folder, ec)) {
    if (::renameat2(AT_FDCWD, partial.c_str(), AT_FDCWD, folder.c_str(), RENAME_EXCHANGE) == 0) {
      sync_directory(dir_);
      remove_step_folder(partial);  // now the old checkpoint
      last_written_ = at.step;
      return;
    }
    remove_step_folder(folder);
  }
  fs::rename(partial, folder, ec);
  if (ec) fail("cannot save the checkpoint of step {}: renaming '{}' to '{}' failed: {}", at.step, partial.string(),
               folder.string(), ec.message());
  sync_directory(dir_);
  last_written_ = at.step;
}

void RunCheckpoints::point(const char* pointer, int64_t step) {
  write_file_atomically(dir_ / pointer, step_folder_name(step) + "\n");
}

void RunCheckpoints::prune() {
  std::set<fs::path> keep;
  for (const char* pointer : {"latest", "best"}) {
    try {
      const fs::path target = pointer_target(pointer);
      if (!target.empty()) keep.insert(target);
    } catch (const Error&) {
      // A corrupt pointer protects nothing; restore_latest() reports it.
    }
  }
  if (previous_step_ >= 0) keep.insert(dir_ / step_folder_name(previous_step_));
  std::error_code ec;
  std::vector<fs::path> steps, leftovers;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const fs::path p = entry.path();
    const std::string name = p.filename().string();
    if (entry.is_directory(ec) && step_of_folder_name(name)) {
      if (!keep.count(p)) steps.push_back(p);
    } else if (name.rfind("step-", 0) == 0 && (ends_with(name, kPartial) || ends_with(name, kTrash))) {
      leftovers.push_back(p);
    } else if (name.rfind("latest.tmp.", 0) == 0 || name.rfind("best.tmp.", 0) == 0) {
      leftovers.push_back(p);  // a pointer write a crash interrupted
    }
  }
  for (const fs::path& p : steps) remove_step_folder(p);
  for (const fs::path& p : leftovers) fs::remove_all(p, ec);
}

void RunCheckpoints::save(const TrainingPosition& at) {
  if (!writes_) return;
  write_step(at);
  point("latest", at.step);
  if (latest_step_ != at.step) {
    previous_step_ = latest_step_;
    latest_step_ = at.step;
  }
  prune();
}

bool RunCheckpoints::offer_best(const TrainingPosition& at, double value) {
  POSGRAD_CHECK(!options_.metric.empty(), "offer_best: this run has no best-checkpoint metric");
  if (!std::isfinite(value)) return false;
  if (best_ && (options_.higher_is_better ? !(value > *best_) : !(value < *best_))) return false;
  best_ = value;
  best_step_ = at.step;
  if (!writes_) return true;
  if (last_written_ != at.step) write_step(at);
  point("best", at.step);
  prune();
  return true;
}

TrainingPosition RunCheckpoints::restore_from(const fs::path& folder) {
  const Checkpoint ck = load_checkpoint(folder);
  TrainingPosition at;
  at.step = ck.step;
  at.tensor_files = ck.tensor_files;
  std::optional<double> best;
  int64_t best_step = -1;
  try {
    const nlohmann::json state = nlohmann::json::parse(ck.extra_json);
    at.epoch = state.at("epoch").get<int64_t>();
    at.batch_in_epoch = state.at("batch_in_epoch").get<int64_t>();
    at.extra = state.value("extra", nlohmann::json::object());
    if (state.contains("best")) {
      best = state["best"].at("value").get<double>();
      best_step = state["best"].at("step").get<int64_t>();
    }
  } catch (const nlohmann::json::exception& e) {
    fail("checkpoint file '{}': its training position is incomplete: {}", (folder / "state.json").string(), e.what());
  }
  try {
    model_.load_state_dict(ck.model);
    optimizer_.load_state(ck.optimizer);
  } catch (const Error& e) {
    fail("checkpoint '{}' does not fit this run: {}", folder.string(), e.what());
  }
  generator_.set_state(ck.rng_seed, ck.rng_offset);
  best_ = best;
  best_step_ = best_step;
  last_written_ = at.step;
  latest_step_ = at.step;
  previous_step_ = -1;
  return at;
}

TrainingPosition RunCheckpoints::restore_latest() {
  std::vector<std::string> tried;  // "<what>: <problem>"
  std::vector<fs::path> candidates;
  fs::path named;
  bool pointer_file = false;
  try {
    std::error_code ec;
    pointer_file = fs::exists(dir_ / "latest", ec);
    named = latest_path();
  } catch (const Error& e) {
    tried.push_back(fmt::format("'latest': {}", e.what()));
    fmt::print(stderr, "resume: {}; trying the step folders, newest first\n", e.what());
  }
  if (!named.empty()) candidates.push_back(named);

  // The other complete step folders, newest first.
  std::vector<std::pair<int64_t, fs::path>> others;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const auto step = step_of_folder_name(entry.path().filename().string());
    if (step && entry.is_directory(ec) && entry.path() != named) others.emplace_back(*step, entry.path());
  }
  std::sort(others.begin(), others.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [step, path] : others) candidates.push_back(path);

  if (candidates.empty() && tried.empty())
    fail("cannot resume: '{}' holds no checkpoint (no 'latest' file and no step folders)", dir_.string());
  if (!pointer_file) {
    tried.push_back(fmt::format("'{}': no such file", (dir_ / "latest").string()));
    fmt::print(stderr, "resume: '{}' has no 'latest' file; trying the step folders, newest first\n", dir_.string());
  }

  std::set<fs::path> failed;
  for (const fs::path& folder : candidates) {
    TrainingPosition at;
    try {
      at = restore_from(folder);
    } catch (const Error& e) {
      tried.push_back(fmt::format("'{}': {}", folder.string(), e.what()));
      fmt::print(stderr, "resume: checkpoint '{}' does not load: {}\n", folder.string(), e.what());
      failed.insert(folder);
      continue;
    }
    if (folder != named) {
      fmt::print(stderr, "resume: restored '{}' (step {}) instead of the latest checkpoint\n", folder.string(),
                 at.step);
      if (writes_) point("latest", at.step);
    }
    // The fallback until the next save: the newest older folder not found broken just now (a
    // step-<N> folder is complete by construction; it is verified when it is loaded).
    for (const auto& [step, path] : others)
      if (step < at.step && !failed.count(path)) {
        previous_step_ = step;
        break;
      }
    return at;
  }
  std::string list;
  for (const std::string& t : tried) list += "\n  " + t;
  fail("cannot resume: no checkpoint in '{}' loads; tried:{}", dir_.string(), list);
}

}  // namespace posgrad::apps
