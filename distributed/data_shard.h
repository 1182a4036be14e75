// Data shards: which part of every global batch a rank computes. A global batch of B examples
// is cut into `size` contiguous slices of B / size; rank r takes slice r, examples
// [r * B/size, (r+1) * B/size) of the batch in the epoch's seeded order. So the union over the
// ranks of one step's slices is that step's batch, and the union over an epoch is exactly the
// single-process epoch, in the same steps. (Contiguous, not strided: a language model's streams
// stay whole rows of the batch on one rank.)
//
//   const Shard s = shard_of_batch(B, rank, size, "train.batch_size");   // throws unless size | B
//   Tensor mine = batch.narrow(0, s.first, s.count);                    // [B/size, ...]
//
// Deliberately does not: uneven shards (a batch not divisible by the rank count is refused with
// a line naming the setting), or shuffling (the data loader's seeded order is shared).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace posgrad::distributed {

struct Shard {
  int64_t first = 0;  // the first example of the slice, within the batch
  int64_t count = 0;  // B / size
};

// `setting` names the batch setting for the error message.
Shard shard_of_batch(int64_t batch, int rank, int size, const std::string& setting);

// Every batch of `batches` (lists of example indices, each of B examples) cut to this rank's
// slice.
std::vector<std::vector<int64_t>> shard_batches(const std::vector<std::vector<int64_t>>& batches, int rank, int size,
                                                const std::string& setting);

}  // namespace posgrad::distributed
