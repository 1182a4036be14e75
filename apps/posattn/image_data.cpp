// Images of a posattn run (see image_data.h).
// Shapes: letters of shape_legend.h, except n here: the number of images.
#include "apps/posattn/image_data.h"

#include "datasets/cifar10.h"
#include "datasets/data_dir.h"
#include "datasets/image_sequence.h"
#include "datasets/mnist.h"
#include "datasets/seeding.h"
#include "tensor/error.h"
#include "tensor/ops.h"

namespace posgrad::posattn_app {

namespace {

// [n, C, H, W] -> [n, C, s, s] by averaging f x f blocks (f = H / s).
Tensor average_pool(const Tensor& images, int64_t side, const std::string& dataset) {
  const int64_t n = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3);
  if (side == 0 || side == H) return images;
  if (H != W || side > H || H % side != 0)
    fail("data.image_size {} does not fit {}'s {}x{} images: it must divide {}", side, dataset, H, W, H);
  const int64_t f = H / side;
  const std::vector<float> in = images.contiguous().to_vector<float>();
  std::vector<float> out(static_cast<size_t>(n * C * side * side), 0.0f);
  const float scale = 1.0f / static_cast<float>(f * f);
  for (int64_t p = 0; p < n * C; ++p)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x)
        out[static_cast<size_t>((p * side + y / f) * side + x / f)] += in[static_cast<size_t>((p * H + y) * W + x)] * scale;
  return Tensor::from_vector(out, {n, C, side, side});
}

void check_image_size(const PosattnSettings& c, int64_t native) {
  const int64_t side = c.data.image_size;
  if (side != 0 && (side > native || native % side != 0))
    fail("data.image_size {} does not fit {}'s {}x{} images: it must divide {} (e.g. {}), or be 0 for the native size",
         side, c.data.dataset, native, native, native, native / 2);
}

// `subset` (when non-empty) picks the images first, so only they are pooled and copied.
ImageSet prepare(Tensor images, Tensor labels, const PosattnSettings& c, std::vector<std::string> names,
                 const std::vector<int64_t>& subset = {}) {
  if (!subset.empty()) {
    const Tensor index = Tensor::from_vector(subset, {static_cast<int64_t>(subset.size())});
    images = index_select(images, 0, index);
    labels = index_select(labels, 0, index);
  }
  ImageSet set;
  set.class_names = std::move(names);
  set.classes = 10;
  Tensor pooled = average_pool(images, c.data.image_size, c.data.dataset);  // [n, C, S0, S1]
  set.channels = pooled.size(1);
  Tensor inputs;
  if (c.data.dataset == "smnist") {
    inputs = images_to_sequence(pooled);  // [n, N, C]
    set.structure = {inputs.size(1)};
  } else {
    inputs = images_to_channels_last(pooled);  // [n, S0, S1, C]
    set.structure = {inputs.size(1), inputs.size(2)};
  }
  set.all = std::make_shared<TensorDataset>(inputs, labels);
  return set;
}

}  // namespace

std::filesystem::path dataset_folder(const PosattnSettings& c) {
  const std::string name = c.data.dataset == "cifar10" ? "cifar10" : "mnist";
  std::filesystem::path root;
  try {
    root = find_data_dir(c.data.dir);
  } catch (const Error& e) {
    fail("{}\n(point the app at your data with -Ddata.dir=FOLDER or {}=FOLDER; FOLDER holds cifar10/ or mnist/; or "
         "fetch it: {})",
         e.what(), kDataDirEnv, fetch_command(name, c.data.dir));
  }
  const std::filesystem::path sub = root / name;
  if (!std::filesystem::is_directory(sub))
    fail("data.dataset {}: no folder '{}' in the data folder '{}' (found via {}); fetch it with {}, or point elsewhere "
         "with -Ddata.dir=FOLDER or {}=FOLDER",
         c.data.dataset, sub.filename().string(), root.string(), c.data.dir.empty() ? "the default lookup" : "data.dir",
         fetch_command(name, root.string()), kDataDirEnv);
  return sub;
}

// The seeded subset of `n` images (empty: all), a stream of its own, apart from the split's.
static std::vector<int64_t> subset_indices(const PosattnSettings& c, int64_t n) {
  if (c.data.small_dataset == 0) return {};
  if (c.data.small_dataset > n)
    fail("data.small_dataset ({}) is larger than the {} images of {}", c.data.small_dataset, n, c.data.dataset);
  std::vector<int64_t> order =
      random_split_indices(n, 0.0, derive_seed(static_cast<uint64_t>(c.seed), SeedStream::Split, 1)).train;
  order.resize(static_cast<size_t>(c.data.small_dataset));
  return order;
}

ImageSplits load_train_val(const PosattnSettings& c) {
  check_image_size(c, c.data.dataset == "cifar10" ? 32 : 28);
  const std::filesystem::path dir = dataset_folder(c);
  ImageSplits out;
  if (c.data.dataset != "cifar10" && c.data.train_batches != kCifarTrainBatches)
    fail("data.train_batches ({}) applies to cifar10 only, not data.dataset {}", c.data.train_batches, c.data.dataset);
  if (c.data.dataset == "cifar10") {
    Cifar10 d = load_cifar10_train(dir, PixelRange::Symmetric, c.data.train_batches);
    out.set = prepare(d.images, d.labels, c, cifar10_class_names(dir), subset_indices(c, d.size()));
  } else {
    Mnist d = load_mnist(dir, /*train=*/true, PixelRange::Symmetric);
    out.set = prepare(d.images, d.labels, c, {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, subset_indices(c, d.size()));
  }
  out.parts = random_split(out.set.all, c.data.val_fraction, static_cast<uint64_t>(c.seed));
  if (out.parts.val->size() == 0)
    fail("the validation split is empty ({} images, data.val_fraction {})", out.set.all->size(), c.data.val_fraction);
  return out;
}

ImageSet load_test(const PosattnSettings& c) {
  check_image_size(c, c.data.dataset == "cifar10" ? 32 : 28);
  const std::filesystem::path dir = dataset_folder(c);
  if (c.data.dataset == "cifar10") {
    std::optional<Cifar10> d = load_cifar10_test(dir);
    if (!d)
      fail("no CIFAR-10 test set: '{}' does not exist (the posattn protocol needs only the training batches; put the "
           "official test_batch.bin there to score on it, or use --split val)",
           (dir / "test_batch.bin").string());
    return prepare(d->images, d->labels, c, cifar10_class_names(dir));
  }
  Mnist d = load_mnist(dir, /*train=*/false, PixelRange::Symmetric);
  return prepare(d.images, d.labels, c, {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"});
}

}  // namespace posgrad::posattn_app
