// Data shards: see data_shard.h.
#include "distributed/data_shard.h"

#include "tensor/error.h"

namespace posgrad::distributed {

Shard shard_of_batch(int64_t batch, int rank, int size, const std::string& setting) {
  POSGRAD_CHECK(size >= 1 && rank >= 0 && rank < size, "shard_of_batch: rank {} of {}", rank, size);
  if (batch % size != 0)
    fail("{} {} cannot be split evenly over {} ranks: choose a batch divisible by {} (each rank computes "
         "{} / {} examples and the gradients are averaged)",
         setting, batch, size, size, setting, size);
  const int64_t count = batch / size;
  return {rank * count, count};
}

std::vector<std::vector<int64_t>> shard_batches(const std::vector<std::vector<int64_t>>& batches, int rank, int size,
                                                const std::string& setting) {
  std::vector<std::vector<int64_t>> mine;
  mine.reserve(batches.size());
  for (const auto& b : batches) {
    const Shard s = shard_of_batch(static_cast<int64_t>(b.size()), rank, size, setting);
    mine.emplace_back(b.begin() + s.first, b.begin() + s.first + s.count);
  }
  return mine;
}

}  // namespace posgrad::distributed
