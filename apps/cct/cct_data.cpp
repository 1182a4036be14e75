// The cct app's CIFAR-10 splits (see cct_data.h).
#include "apps/cct/cct_data.h"

#include "datasets/cifar10.h"
#include "datasets/data_dir.h"
#include "datasets/seeding.h"
#include "datasets/split.h"
#include "tensor/error.h"

namespace posgrad::cct_app {

namespace {

// A seeded split of `pool` (indices into the base) into (rest, held out of `count`).
std::pair<std::vector<int64_t>, std::vector<int64_t>> hold_out(const std::vector<int64_t>& pool, int64_t count,
                                                                uint64_t seed, const char* what) {
  const auto n = static_cast<int64_t>(pool.size());
  if (count >= n) fail("data: cannot hold out {} {} images of {} (lower data.{}_images)", count, what, n, what);
  const SplitIndices s = random_split_indices(n, static_cast<double>(count) / static_cast<double>(n), seed);
  std::vector<int64_t> rest, held;
  for (int64_t i : s.train) rest.push_back(pool[i]);
  for (int64_t i : s.val) held.push_back(pool[i]);
  return {rest, held};
}

}  // namespace

CctData load_cct_data(const CctSettings& c) {
  const auto dir = find_data_dir(c.data.dir) / "cifar10";
  const Cifar10 train = load_cifar10_train(dir, PixelRange::Unit, c.data.train_batches);
  std::shared_ptr<const Dataset> base = train.dataset();
  std::vector<int64_t> pool(static_cast<size_t>(base->size()));
  for (int64_t i = 0; i < base->size(); ++i) pool[i] = i;
  const uint64_t seed = derive_seed(static_cast<uint64_t>(c.seed), SeedStream::Split);
  if (c.data.small_dataset > 0 && c.data.small_dataset < base->size())
    pool = hold_out(pool, c.data.small_dataset, seed ^ 0x5u, "small_dataset").second;
  CctData d;
  d.class_names = cifar10_class_names(dir);
  if (auto test = load_cifar10_test(dir, PixelRange::Unit)) {
    d.test = test->dataset();
    d.test_source = "test_batch.bin";
  } else {
    const int64_t count = c.data.small_dataset > 0 ? std::max<int64_t>(1, c.data.test_images * static_cast<int64_t>(pool.size()) / base->size())
                                                   : c.data.test_images;
    auto [rest, held] = hold_out(pool, count, seed ^ 0x7u, "test");
    d.test = std::make_shared<SubsetDataset>(base, held);
    d.test_source = fmt::format("{} images held out of data_batch_*.bin (test_batch.bin absent)", held.size());
    pool = rest;
  }
  const int64_t val_count = c.data.small_dataset > 0 ? std::max<int64_t>(1, c.data.val_images * static_cast<int64_t>(pool.size()) / base->size())
                                                     : c.data.val_images;
  auto [rest, held] = hold_out(pool, val_count, seed ^ 0x3u, "val");
  d.val = std::make_shared<SubsetDataset>(base, held);
  d.train = std::make_shared<SubsetDataset>(base, rest);
  return d;
}

AugmentSettings train_augmentation(const CctSettings& c) {
  AugmentSettings a;
  a.autoaugment = c.augment.autoaugment;
  a.crop_padding = c.augment.crop_padding;
  a.flip = c.augment.flip;
  return a;
}

std::shared_ptr<const Dataset> evaluation_view(std::shared_ptr<const Dataset> raw) {
  return std::make_shared<AugmentedImages>(std::move(raw), AugmentSettings{}, 0, 0);
}

}  // namespace posgrad::cct_app
