// Fuzz harness: MNIST's IDX reader, raw and gzip (load_idx_images, load_idx_labels, load_mnist).
// The first input byte chooses what to do, the rest is file content:
//   bit 0: 0 = an image file (magic 0x803), 1 = a label file (0x801)
//   bit 1: gzip-compress the content before writing it (the loaders take .gz and plain files;
//          content that is already gzip bytes, as in the seed corpus, fuzzes the decompressor)
//   bit 2: PixelRange::Symmetric instead of Unit
//   bit 3: a pair: the content is split at kFileSeparator into an image file and a label file,
//          written under the standard names, and read with load_mnist (bit 4: train or t10k)
// A file that loads must give images float32 [n, 1, rows, cols] with values in range and labels
// int64 [n] in 0..9, and shapes whose strides fit in int64 (check_representable).
#include <cstddef>
#include <cstdint>
#include <string>

#include "datasets/mnist.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using posgrad::fuzz::fuzz_finding;

void check_images(const posgrad::Tensor& images, posgrad::PixelRange range) {
  posgrad::fuzz::check_representable(images, "load_idx_images");
  if (images.dim() != 4 || images.size(1) != 1 || images.dtype() != posgrad::kFloat32)
    fuzz_finding("load_idx_images returned " + images.describe());
  const float lo = range == posgrad::PixelRange::Unit ? 0.0f : -1.0f;
  const float* p = images.data<float>();
  for (int64_t i = 0; i < images.numel(); ++i)
    if (!(p[i] >= lo && p[i] <= 1.0f)) fuzz_finding("load_idx_images returned a pixel out of range");
}

void check_labels(const posgrad::Tensor& labels) {
  posgrad::fuzz::check_representable(labels, "load_idx_labels");
  if (labels.dim() != 1 || labels.dtype() != posgrad::kInt64) fuzz_finding("load_idx_labels returned " + labels.describe());
  const int64_t* p = labels.data<int64_t>();
  for (int64_t i = 0; i < labels.numel(); ++i)
    if (p[i] < 0 || p[i] > 9) fuzz_finding("load_idx_labels returned a label out of 0..9");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace posgrad::fuzz;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const bool labels = mode & 1, compress = mode & 2, pair = mode & 8, train = mode & 16;
  const posgrad::PixelRange range = mode & 4 ? posgrad::PixelRange::Symmetric : posgrad::PixelRange::Unit;
  const std::string_view content = as_text(data + 1, size - 1);
  const std::filesystem::path dir = fresh_dir("mnist");
  auto write = [&](const std::filesystem::path& path, std::string_view bytes) {
    compress ? write_gzip_file(path, bytes) : write_file(path, bytes);
  };

  if (pair) {
    const auto parts = split_files(content);
    const std::string prefix = train ? "train" : "t10k";
    const std::string suffix = compress ? ".gz" : "";
    write(dir / (prefix + "-images-idx3-ubyte" + suffix), parts[0]);
    if (parts.size() > 1) write(dir / (prefix + "-labels-idx1-ubyte" + suffix), parts[1]);
    expect_error_or_success([&] {
      const posgrad::Mnist m = posgrad::load_mnist(dir, train, range);
      check_images(m.images, range);
      check_labels(m.labels);
      if (m.images.size(0) != m.labels.size(0)) fuzz_finding("load_mnist returned different image and label counts");
    });
    return 0;
  }
  const std::filesystem::path file = dir / (compress ? "file.gz" : "file");
  write(file, content);
  expect_error_or_success([&] {
    if (labels) check_labels(posgrad::load_idx_labels(file));
    else check_images(posgrad::load_idx_images(file, range), range);
  });
  return 0;
}
