// random_split (see split.h).
#include "datasets/split.h"

#include <cmath>

#include "datasets/seeding.h"
#include "tensor/error.h"
#include "tensor/ops.h"
#include "tensor/random.h"

namespace posgrad {

SplitIndices random_split_indices(int64_t n, double val_fraction, uint64_t seed) {
  if (n < 1) fail("random_split: nothing to split (n = {})", n);
  if (!(val_fraction >= 0.0 && val_fraction < 1.0))
    fail("random_split: val_fraction must be in [0, 1), got {}", val_fraction);
  const int64_t n_val = static_cast<int64_t>(std::floor(static_cast<double>(n) * val_fraction));
  Generator gen(derive_seed(seed, SeedStream::Split));
  const std::vector<int64_t> perm = randperm(n, gen).to_vector<int64_t>();
  SplitIndices out;
  out.train.assign(perm.begin(), perm.end() - n_val);
  out.val.assign(perm.end() - n_val, perm.end());
  return out;
}

TrainVal random_split(std::shared_ptr<const Dataset> dataset, double val_fraction, uint64_t seed) {
  if (!dataset) fail("random_split: no dataset");
  SplitIndices parts = random_split_indices(dataset->size(), val_fraction, seed);
  return TrainVal{std::make_shared<SubsetDataset>(dataset, std::move(parts.train)),
                  std::make_shared<SubsetDataset>(dataset, std::move(parts.val))};
}

}  // namespace posgrad
