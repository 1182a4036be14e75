// DataParallel: see data_parallel.h.
#include "apps/common/data_parallel.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "distributed/launch_environment.h"
#include "distributed/replicas.h"
#include "tensor/device.h"

namespace posgrad::apps {

namespace {

Device rank_device(Device device, const distributed::ProcessGroup& world) {
  if (!device.is_cuda() || world.size() == 1 || device.index != 0) return device;
  const int gpus = cuda_device_count();
  if (gpus <= 1) return device;
  return Device{DeviceType::CUDA, distributed::launch_environment().local_rank % gpus};
}

bool overlap_wanted() {
  const char* setting = std::getenv("POSGRAD_GRADIENT_OVERLAP");
  return setting == nullptr || std::strcmp(setting, "0") != 0;
}

}  // namespace

DataParallel::DataParallel(Device device)
    : world_(distributed::world()), device_(rank_device(device, world_)), overlap_(overlap_wanted()) {
  if (!writes()) std::freopen("/dev/null", "w", stdout);  // rank 0 reports progress for the run
}

distributed::Shard DataParallel::shard(int64_t global_batch, const std::string& setting) const {
  return distributed::shard_of_batch(global_batch, rank(), size(), setting);
}

std::string DataParallel::describe(int64_t global_batch, int64_t accumulation, double lr) const {
  const auto env = distributed::launch_environment();
  return fmt::format(
      "# data parallel: {} rank{}{} ({}); global batch {} = {} x {} per rank; {} batch{} per optimizer step, so the "
      "effective batch is {}; the gradients are averaged over the ranks, so lr {} acts on that effective batch as "
      "in one process\n",
      size(), size() == 1 ? "" : "s", env.launcher.empty() ? "" : fmt::format(" launched by {}", env.launcher),
      world_.engine(), global_batch, size(), global_batch / size(), accumulation, accumulation == 1 ? "" : "es",
      global_batch * accumulation, lr);
}

uint64_t DataParallel::seed(uint64_t seed) { return distributed::broadcast_seed(seed, world_); }

nlohmann::json DataParallel::summary() const {
  const auto& stats = gradient_stats();
  const double steps = static_cast<double>(std::max<int64_t>(1, stats.calls));
  return {{"ranks", size()},
          {"engine", world_.engine()},
          {"overlap", overlap_ && averager_->overlaps()},
          {"optimizer_steps_here", stats.calls},
          {"allreduce_seconds_per_step", stats.seconds / steps},  // waiting after the backward
          {"allreduce_seconds_in_backward_per_step", stats.backward_seconds / steps},
          {"buckets_started_in_backward_per_step", static_cast<double>(stats.buckets_started_in_backward) / steps},
          {"allreduce_bytes_per_step", static_cast<double>(stats.bytes) / steps}};
}

void DataParallel::replicate(Module& model) {
  distributed::broadcast_module(model, world_);
  averager_.reset();  // its destructor removes the hooks of the parameters it averaged
  averager_ = std::make_unique<distributed::GradientAverager>(model.parameters(), distributed::group_for(device_));
}

void DataParallel::overlap_next_backward() {
  POSGRAD_CHECK(averager_, "DataParallel: overlap_next_backward() before replicate(model)");
  if (overlap_) averager_->overlap_next_backward();
}

void DataParallel::refuse_collective_in_overlap(const char* what) const {
  POSGRAD_CHECK(!averager_ || !averager_->armed(),
                "DataParallel: {} between overlap_next_backward() and average_gradients() (gradient sums may be in "
                "flight; every rank must run its collectives in one order): call it before the backward or after "
                "average_gradients()",
                what);
}

void DataParallel::average_gradients() {
  POSGRAD_CHECK(averager_, "DataParallel: average_gradients() before replicate(model)");
  averager_->average();
}

const distributed::GradientAverager::Stats& DataParallel::gradient_stats() const {
  POSGRAD_CHECK(averager_, "DataParallel: gradient_stats() before replicate(model)");
  return averager_->stats();
}

RunDir DataParallel::open_run_dir(const TrainRequest& request, const Settings& settings, const std::string& note) {
  TrainRequest shared = request;
  // The folder is rank 0's (a default name holds the time, which differs between ranks).
  std::string out = request.out_dir.string();
  world_.broadcast(out, 0);
  shared.out_dir = out;
  if (writes()) {
    RunDir run = apps::open_run_dir(shared, settings, note);
    world_.barrier();  // the folder exists (and an overwritten run's files are gone)
    return run;
  }
  world_.barrier();
  return RunDir(shared.out_dir, ExistingRun::Follow);
}

TrainingPosition DataParallel::restore(RunCheckpoints& checkpoints) {
  if (writes()) {
    TrainingPosition at = checkpoints.restore_latest();
    world_.barrier();  // `latest` names a checkpoint that loads (after any fallback)
    return at;
  }
  world_.barrier();
  return checkpoints.restore_latest();
}

Tensor DataParallel::gather_rows(const Tensor& rows) {
  refuse_collective_in_overlap("gather_rows()");
  if (size() == 1) return rows;
  return world_.all_gather(rows.to(kCPU).contiguous());
}

double DataParallel::mean(double value) { return mean(std::vector<double>{value})[0]; }

std::vector<double> DataParallel::mean(std::vector<double> values) {
  refuse_collective_in_overlap("mean()");
  return distributed::mean_over_ranks(std::move(values), world_);
}

double DataParallel::sum(double value) {
  refuse_collective_in_overlap("sum()");
  std::vector<double> v{value};
  world_.all_reduce_sum(v);
  return v[0];
}

}  // namespace posgrad::apps
