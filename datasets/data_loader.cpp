// DataLoader and Epoch (see data_loader.h). The worker and the consumer share one State through a
// mutex and two condition variables; the queue holds at most `prefetch` built batches.
#include "datasets/data_loader.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>

#include "datasets/seeding.h"
#include "tensor/error.h"
#include "tensor/ops.h"
#include "tensor/random.h"

namespace posgrad {

struct Epoch::State {
  std::shared_ptr<const Dataset> dataset;
  std::vector<std::vector<int64_t>> batches;
  size_t capacity = 0;  // 0: synchronous, no worker
  size_t next_sync = 0;  // synchronous mode: the next batch to build

  struct Item {
    Batch batch;
    std::exception_ptr error;
  };
  std::mutex mutex;
  std::condition_variable not_full, not_empty;
  std::deque<Item> queue;
  bool producer_done = false;  // the worker has pushed its last item
  bool stop = false;           // the consumer is gone: the worker must exit
  bool finished = false;       // the consumer saw the end (or an error)

  void produce() {
    for (const std::vector<int64_t>& indices : batches) {
      Item item;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (stop) break;
      }
      try {
        item.batch = dataset->get_batch(indices);
      } catch (...) {
        item.error = std::current_exception();
      }
      const bool failed = item.error != nullptr;
      std::unique_lock<std::mutex> lock(mutex);
      not_full.wait(lock, [&] { return stop || queue.size() < capacity; });
      if (stop) break;
      queue.push_back(std::move(item));
      not_empty.notify_one();
      if (failed) break;
    }
    std::lock_guard<std::mutex> lock(mutex);
    producer_done = true;
    not_empty.notify_all();
  }
};

Epoch::Epoch(std::shared_ptr<const Dataset> dataset, std::vector<std::vector<int64_t>> batches,
             int64_t prefetch)
    : state_(std::make_unique<State>()) {
  if (!dataset) fail("Epoch: no dataset");
  if (prefetch < 0) fail("DataLoader: prefetch must be >= 0, got {}", prefetch);
  state_->dataset = std::move(dataset);
  state_->batches = std::move(batches);
  state_->capacity = static_cast<size_t>(prefetch);
  if (prefetch > 0 && !state_->batches.empty()) {
    State* s = state_.get();  // stable address: the State outlives the thread (joined in stop())
    worker_ = std::thread([s] { s->produce(); });
  } else if (prefetch > 0) {
    state_->producer_done = true;
  }
}

Epoch::~Epoch() { stop(); }

Epoch::Epoch(Epoch&& other) noexcept = default;

Epoch& Epoch::operator=(Epoch&& other) noexcept {
  if (this != &other) {
    stop();
    state_ = std::move(other.state_);
    worker_ = std::move(other.worker_);
  }
  return *this;
}

void Epoch::stop() {
  if (state_ && worker_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->stop = true;
      state_->queue.clear();  // drop prefetched batches now rather than at destruction
    }
    state_->not_full.notify_all();
    worker_.join();
  }
}

int64_t Epoch::num_batches() const {
  return state_ ? static_cast<int64_t>(state_->batches.size()) : 0;
}

std::optional<Batch> Epoch::next() {
  if (!state_) fail("Epoch: used after being moved from");
  State& s = *state_;
  if (s.capacity == 0) {  // synchronous: build on this thread; exceptions propagate directly
    if (s.finished || s.next_sync >= s.batches.size()) {
      s.finished = true;
      return std::nullopt;
    }
    const size_t k = s.next_sync++;
    try {
      return s.dataset->get_batch(s.batches[k]);
    } catch (...) {
      s.finished = true;
      throw;
    }
  }
  State::Item item;
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    if (s.finished) return std::nullopt;
    s.not_empty.wait(lock, [&] { return !s.queue.empty() || s.producer_done; });
    if (s.queue.empty()) {
      s.finished = true;
      return std::nullopt;
    }
    item = std::move(s.queue.front());
    s.queue.pop_front();
    if (item.error) s.finished = true;
  }
  s.not_full.notify_one();
  if (item.error) std::rethrow_exception(item.error);
  return std::move(item.batch);
}

void Epoch::Iterator::advance() {
  std::optional<Batch> b = epoch_->next();
  if (b) {
    current_ = std::move(*b);
  } else {
    current_ = Batch{};
    done_ = true;
  }
}

// ------------------------------------------------------------ DataLoader

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, const DataLoaderOptions& options)
    : dataset_(std::move(dataset)), options_(options) {
  if (!dataset_) fail("DataLoader: no dataset");
  if (options_.batch_size < 1) fail("DataLoader: batch_size must be >= 1, got {}", options_.batch_size);
  if (options_.prefetch < 0) fail("DataLoader: prefetch must be >= 0, got {}", options_.prefetch);
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, int64_t batch_size, bool shuffle,
                       uint64_t seed, bool drop_last, int64_t prefetch)
    : DataLoader(std::move(dataset), DataLoaderOptions{batch_size, shuffle, seed, drop_last, prefetch}) {}

std::vector<int64_t> DataLoader::order(int64_t epoch) const {
  const int64_t n = dataset_->size();
  if (!options_.shuffle || n <= 1) {
    std::vector<int64_t> identity(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) identity[static_cast<size_t>(i)] = i;
    return identity;
  }
  Generator gen(derive_seed(options_.seed, SeedStream::Shuffle, static_cast<uint64_t>(epoch)));
  return randperm(n, gen).to_vector<int64_t>();
}

int64_t DataLoader::num_batches() const {
  const int64_t n = dataset_->size(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

std::vector<std::vector<int64_t>> DataLoader::batch_indices(int64_t epoch) const {
  const std::vector<int64_t> ord = order(epoch);
  const int64_t n = static_cast<int64_t>(ord.size()), b = options_.batch_size;
  std::vector<std::vector<int64_t>> batches;
  batches.reserve(static_cast<size_t>(num_batches()));
  for (int64_t start = 0; start < n; start += b) {
    const int64_t end = std::min(n, start + b);
    if (end - start < b && options_.drop_last) break;
    batches.emplace_back(ord.begin() + start, ord.begin() + end);
  }
  return batches;
}

Epoch DataLoader::epoch(int64_t epoch, int64_t first_batch) const {
  POSGRAD_CHECK(first_batch >= 0, "DataLoader::epoch: first_batch must be >= 0, got {}", first_batch);
  std::vector<std::vector<int64_t>> batches = batch_indices(epoch);
  batches.erase(batches.begin(), batches.begin() + std::min<int64_t>(first_batch, static_cast<int64_t>(batches.size())));
  return Epoch(dataset_, std::move(batches), options_.prefetch);
}

}  // namespace posgrad
