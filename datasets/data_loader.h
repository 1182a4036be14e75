// DataLoader: batches of a Dataset in a seeded, per-epoch order, with background prefetch.
//
//   DataLoader loader(dataset, /*batch_size=*/32, /*shuffle=*/true, /*seed=*/7);
//   for (int64_t e = 0; e < epochs; ++e)
//     for (const Batch& b : loader.epoch(e)) { ... b.input [B, ...], b.target [B, ...] ... }
//
// - Order. With shuffle, epoch e visits the examples in randperm(n) drawn from a Philox generator
//   keyed by derive_seed(seed, SeedStream::Shuffle, e): epochs differ, runs are reproducible, and
//   the order never depends on `prefetch`. Without shuffle, the order is 0..n-1.
// - drop_last drops a final batch smaller than batch_size; otherwise it is yielded (B < batch_size).
// - prefetch = k > 0: one std::thread builds batches ahead into a queue of at most k batches;
//   prefetch = 0: batches are built on the consumer thread when asked for.
// - An exception thrown while building a batch is re-thrown to the consumer at that batch.
// - Leaving the loop early (break, exception) destroys the Epoch, which stops the worker and joins
//   it: no hang, no leaked thread.
//
// This file deliberately has one worker thread (examples are decoded in memory here, and a single
// producer keeps the order trivially deterministic), no sampler classes, and no pinned memory.
// Shapes: letters of shape_legend.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "datasets/dataset.h"

namespace posgrad {

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  uint64_t seed = 0;
  bool drop_last = false;
  int64_t prefetch = 2;  // batches built ahead on the worker thread; 0 = no thread
};

// One pass over the data. Single-pass: iterate it once (range-for or next()). Movable, not
// copyable; its destructor stops the worker thread.
class Epoch {
 public:
  Epoch(std::shared_ptr<const Dataset> dataset, std::vector<std::vector<int64_t>> batches,
        int64_t prefetch);
  ~Epoch();
  Epoch(Epoch&&) noexcept;
  Epoch& operator=(Epoch&&) noexcept;
  Epoch(const Epoch&) = delete;
  Epoch& operator=(const Epoch&) = delete;

  // The next batch, or nullopt at the end of the epoch. Re-throws the worker's exception.
  std::optional<Batch> next();
  int64_t num_batches() const;

  struct End {};
  class Iterator {
   public:
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    explicit Iterator(Epoch* epoch) : epoch_(epoch) { advance(); }
    const Batch& operator*() const { return current_; }
    const Batch* operator->() const { return &current_; }
    Iterator& operator++() { advance(); return *this; }
    bool operator==(End) const { return done_; }

   private:
    void advance();
    Epoch* epoch_;
    Batch current_;
    bool done_ = false;
  };
  Iterator begin() { return Iterator(this); }
  End end() { return {}; }

 private:
  struct State;
  void stop();
  std::unique_ptr<State> state_;
  std::thread worker_;
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, const DataLoaderOptions& options);
  DataLoader(std::shared_ptr<const Dataset> dataset, int64_t batch_size, bool shuffle = false,
             uint64_t seed = 0, bool drop_last = false, int64_t prefetch = 2);

  // Starts epoch `epoch` (the worker begins prefetching at once).
  // Epoch `epoch`, starting at its batch `first_batch` (a resumed run skips the batches it used
  // before it stopped, without building them); first_batch past the end gives an empty epoch.
  Epoch epoch(int64_t epoch, int64_t first_batch = 0) const;
  // The example order of an epoch (a permutation of 0..n-1), and its split into batches.
  std::vector<int64_t> order(int64_t epoch) const;
  std::vector<std::vector<int64_t>> batch_indices(int64_t epoch) const;
  int64_t num_batches() const;  // per epoch, after drop_last
  int64_t dataset_size() const { return dataset_->size(); }
  const DataLoaderOptions& options() const { return options_; }
  const std::shared_ptr<const Dataset>& dataset() const { return dataset_; }

 private:
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
};

}  // namespace posgrad
