// MNIST loading (see mnist.h).
#include "datasets/mnist.h"

#include <string>

#include "datasets/idx.h"
#include "tensor/error.h"

namespace posgrad {

Tensor load_idx_images(const std::filesystem::path& path, PixelRange range) {
  const IdxArray idx = read_idx(path, kIdxImagesMagic, "pixels");
  const int64_t n = idx.dims[0], rows = idx.dims[1], cols = idx.dims[2];
  Tensor images = Tensor::empty({n, 1, rows, cols}, kFloat32);
  const auto table = pixel_table(range);
  float* out = images.data<float>();
  for (size_t i = 0; i < idx.data.size(); ++i) out[i] = table[idx.data[i]];
  return images;
}

Tensor load_idx_labels(const std::filesystem::path& path) {
  const IdxArray idx = read_idx(path, kIdxLabelsMagic, "labels");
  const int64_t n = idx.dims[0];
  Tensor labels = Tensor::empty({n}, kInt64);
  int64_t* out = labels.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t y = idx.data[static_cast<size_t>(i)];
    if (y > 9) fail("{}: label {} at index {} is out of range 0..9", path.string(), int{y}, i);
    out[i] = y;
  }
  return labels;
}

Mnist load_mnist_files(const std::filesystem::path& images, const std::filesystem::path& labels,
                       PixelRange range) {
  Mnist m{load_idx_images(images, range), load_idx_labels(labels)};
  if (m.images.size(0) != m.labels.size(0))
    fail("{}: {} images, but {} has {} labels", images.string(), m.images.size(0), labels.string(),
         m.labels.size(0));
  return m;
}

namespace {
std::filesystem::path gz_or_raw(const std::filesystem::path& dir, const std::string& stem) {
  const std::filesystem::path gz = dir / (stem + ".gz"), raw = dir / stem;
  if (std::filesystem::exists(gz)) return gz;
  if (std::filesystem::exists(raw)) return raw;
  fail("{}: file not found (nor {})", gz.string(), raw.string());
}
}  // namespace

Mnist load_mnist(const std::filesystem::path& dir, bool train, PixelRange range) {
  const std::string prefix = train ? "train" : "t10k";
  const std::filesystem::path images = gz_or_raw(dir, prefix + "-images-idx3-ubyte");
  const std::filesystem::path labels = gz_or_raw(dir, prefix + "-labels-idx1-ubyte");
  return load_mnist_files(images, labels, range);
}

std::shared_ptr<TensorDataset> Mnist::dataset() const {
  return std::make_shared<TensorDataset>(images, labels);
}

}  // namespace posgrad
