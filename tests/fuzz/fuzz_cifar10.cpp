// Fuzz harness: CIFAR-10 binary batches (load_cifar10_files) and the class-name file
// (cifar10_class_names). The first input byte chooses:
//   bit 0: PixelRange::Symmetric instead of Unit
//   bit 1: the last part is batches.meta.txt (class names), not a batch file
// the rest is split at kFileSeparator into up to four files, loaded in order as batches.
// Batches that load must give images float32 [n, 3, 32, 32] with values in range and labels
// int64 [n] in 0..9, n = total bytes / 3073; class names are always ten.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/cifar10.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace posgrad::fuzz;
  if (size == 0) return 0;
  const posgrad::PixelRange range = data[0] & 1 ? posgrad::PixelRange::Symmetric : posgrad::PixelRange::Unit;
  const bool meta = data[0] & 2;
  auto parts = split_files(as_text(data + 1, size - 1));
  if (parts.size() > 4) parts.resize(4);
  const std::filesystem::path dir = fresh_dir("cifar10");
  if (meta) {
    write_file(dir / "batches.meta.txt", parts.back());
    if (posgrad::cifar10_class_names(dir).size() != 10) fuzz_finding("cifar10_class_names did not return ten names");
    parts.pop_back();
  }
  std::vector<std::filesystem::path> files;
  size_t total_bytes = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    files.push_back(dir / ("data_batch_" + std::to_string(i + 1) + ".bin"));
    write_file(files.back(), parts[i]);
    total_bytes += parts[i].size();
  }
  expect_error_or_success([&] {
    const posgrad::Cifar10 c = posgrad::load_cifar10_files(files, range);
    const int64_t n = static_cast<int64_t>(total_bytes / posgrad::kCifarRecordBytes);
    if (c.images.shape() != posgrad::Shape{n, 3, 32, 32} || c.labels.shape() != posgrad::Shape{n})
      fuzz_finding("load_cifar10_files returned " + c.images.describe() + " and " + c.labels.describe());
    const float lo = range == posgrad::PixelRange::Unit ? 0.0f : -1.0f;
    const float* p = c.images.data<float>();
    for (int64_t i = 0; i < c.images.numel(); ++i)
      if (!(p[i] >= lo && p[i] <= 1.0f)) fuzz_finding("load_cifar10_files returned a pixel out of range");
    const int64_t* y = c.labels.data<int64_t>();
    for (int64_t i = 0; i < n; ++i)
      if (y[i] < 0 || y[i] > 9) fuzz_finding("load_cifar10_files returned a label out of 0..9");
  });
  return 0;
}
