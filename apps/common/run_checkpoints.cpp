// RunCheckpoints: see run_checkpoints.h.
#include "apps/common/run_checkpoints.h"

#include <cmath>

#include <fmt/format.h>

#include "apps/common/run_dir.h"
#include "nn/atomic_file.h"
#include "nn/checkpoint.h"
#include "tensor/error.h"

namespace posgrad::apps {

namespace fs = std::filesystem;

std::string step_folder_name(int64_t step) { return fmt::format("step-{:09d}", step); }

RunCheckpoints::RunCheckpoints(const RunDir& run, Module& model, Optimizer& optimizer, Generator& generator,
                               Options options)
    : dir_(run.path() / "checkpoints"), model_(model), optimizer_(optimizer), generator_(generator),
      options_(std::move(options)) {
  fs::create_directories(dir_);
}

fs::path RunCheckpoints::pointer_target(const char* pointer) const {
  const fs::path file = dir_ / pointer;
  std::error_code ec;
  if (!fs::exists(file, ec)) return {};
  std::string name = read_file_bytes(file);
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
  POSGRAD_CHECK(name.rfind("step-", 0) == 0 && name.find('/') == std::string::npos,
                "checkpoint pointer '{}' is corrupt: it holds '{}', not a step folder name", file.string(), name);
  return dir_ / name;
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
  nlohmann::json state{{"epoch", at.epoch}, {"batch_in_epoch", at.batch_in_epoch}, {"extra", at.extra}};
  if (best_) state["best"] = {{"metric", options_.metric}, {"value", *best_}, {"step", best_step_}};
  ck.extra_json = state.dump();
  const fs::path folder = dir_ / step_folder_name(at.step);
  fs::remove_all(folder);  // a folder left by a crash during an earlier save of this step
  save_checkpoint(folder, ck);
  last_written_ = at.step;
}

void RunCheckpoints::point(const char* pointer, int64_t step) {
  write_file_atomically(dir_ / pointer, step_folder_name(step) + "\n");
}

void RunCheckpoints::prune() {
  const fs::path keep_latest = latest_path(), keep_best = best_path();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const fs::path p = entry.path();
    if (entry.is_directory() && p.filename().string().rfind("step-", 0) == 0 && p != keep_latest && p != keep_best)
      fs::remove_all(p, ec);
  }
}

void RunCheckpoints::save(const TrainingPosition& at) {
  write_step(at);
  point("latest", at.step);
  prune();
}

bool RunCheckpoints::offer_best(const TrainingPosition& at, double value) {
  POSGRAD_CHECK(!options_.metric.empty(), "offer_best: this run has no best-checkpoint metric");
  if (!std::isfinite(value)) return false;
  if (best_ && (options_.higher_is_better ? !(value > *best_) : !(value < *best_))) return false;
  best_ = value;
  best_step_ = at.step;
  if (last_written_ != at.step) write_step(at);
  point("best", at.step);
  prune();
  return true;
}

TrainingPosition RunCheckpoints::restore_latest() {
  const fs::path folder = latest_path();
  POSGRAD_CHECK(!folder.empty(), "cannot resume: '{}' holds no checkpoint (no 'latest' file)", dir_.string());
  const Checkpoint ck = load_checkpoint(folder);
  model_.load_state_dict(ck.model);
  optimizer_.load_state(ck.optimizer);
  generator_.set_state(ck.rng_seed, ck.rng_offset);
  const nlohmann::json state = nlohmann::json::parse(ck.extra_json);
  TrainingPosition at;
  at.step = ck.step;
  at.epoch = state.at("epoch").get<int64_t>();
  at.batch_in_epoch = state.at("batch_in_epoch").get<int64_t>();
  at.extra = state.value("extra", nlohmann::json::object());
  if (state.contains("best")) {
    best_ = state["best"].at("value").get<double>();
    best_step_ = state["best"].at("step").get<int64_t>();
  }
  last_written_ = at.step;
  return at;
}

}  // namespace posgrad::apps
