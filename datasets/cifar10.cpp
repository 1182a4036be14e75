// CIFAR-10 binary loading (see cifar10.h). Files are validated by size first, so the output
// tensor is allocated once and each file is decoded straight into its slot.
#include "datasets/cifar10.h"

#include <fstream>

#include "datasets/file_bytes.h"
#include "tensor/error.h"

namespace posgrad {

namespace {
constexpr int64_t kPixels = 3 * 32 * 32;

int64_t count_records(const std::filesystem::path& path, int64_t expected) {
  require_file(path);
  const auto bytes = static_cast<int64_t>(std::filesystem::file_size(path));
  if (bytes == 0) fail("{}: file is empty, expected CIFAR-10 records of {} bytes", path.string(), kCifarRecordBytes);
  if (bytes % kCifarRecordBytes != 0)
    fail("{}: wrong size: {} bytes is not a multiple of the {}-byte CIFAR-10 record ({} records "
         "and {} bytes left over)",
         path.string(), bytes, kCifarRecordBytes, bytes / kCifarRecordBytes, bytes % kCifarRecordBytes);
  const int64_t records = bytes / kCifarRecordBytes;
  if (expected > 0 && records != expected)
    fail("{}: the file holds {} records of {} bytes; a CIFAR-10 batch holds exactly {} (a truncated or partial "
         "download? fetch it again)",
         path.string(), records, kCifarRecordBytes, expected);
  return records;
}
}  // namespace

Cifar10 load_cifar10_files(const std::vector<std::filesystem::path>& files, PixelRange range,
                           int64_t records_per_file) {
  if (files.empty()) fail("load_cifar10_files: no files given");
  std::vector<int64_t> counts;
  int64_t total = 0;
  for (const auto& f : files) total += counts.emplace_back(count_records(f, records_per_file));
  Cifar10 out{Tensor::empty({total, 3, 32, 32}, kFloat32), Tensor::empty({total}, kInt64)};
  float* images = out.images.data<float>();
  int64_t* labels = out.labels.data<int64_t>();
  const auto table = pixel_table(range);
  std::vector<uint8_t> buffer;
  int64_t first = 0;
  for (size_t k = 0; k < files.size(); ++k) {
    const int64_t n = counts[k];
    buffer.resize(static_cast<size_t>(n * kCifarRecordBytes));
    std::ifstream in(files[k], std::ios::binary);
    if (!in) fail("{}: cannot open", files[k].string());
    in.read(reinterpret_cast<char*>(buffer.data()), static_cast<std::streamsize>(buffer.size()));
    if (in.gcount() != static_cast<std::streamsize>(buffer.size()))
      fail("{}: truncated data: expected {} bytes, read {}", files[k].string(), buffer.size(), in.gcount());
    for (int64_t r = 0; r < n; ++r) {
      const uint8_t* rec = buffer.data() + r * kCifarRecordBytes;
      if (rec[0] > 9) fail("{}: label {} in record {} is out of range 0..9", files[k].string(), int{rec[0]}, r);
      labels[first + r] = rec[0];
      float* dst = images + (first + r) * kPixels;
      for (int64_t p = 0; p < kPixels; ++p) dst[p] = table[rec[1 + p]];
    }
    first += n;
  }
  return out;
}

Cifar10 load_cifar10_train(const std::filesystem::path& dir, PixelRange range, int64_t batches,
                           int64_t records_per_file) {
  if (batches < 1 || batches > kCifarTrainBatches)
    fail("load_cifar10_train: {} training batches asked for; CIFAR-10 has data_batch_1 .. data_batch_{}", batches,
         kCifarTrainBatches);
  std::vector<std::filesystem::path> files;
  for (int64_t b = 1; b <= batches; ++b) files.push_back(dir / fmt::format("data_batch_{}.bin", b));
  return load_cifar10_files(files, range, records_per_file);
}

std::optional<Cifar10> load_cifar10_test(const std::filesystem::path& dir, PixelRange range,
                                         int64_t records_per_file) {
  const std::filesystem::path file = dir / "test_batch.bin";
  if (!std::filesystem::exists(file)) return std::nullopt;
  return load_cifar10_files({file}, range, records_per_file);
}

std::vector<std::string> cifar10_class_names(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  if (!dir.empty()) {
    std::ifstream in(dir / "batches.meta.txt");
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line != "\r") names.push_back(line.back() == '\r' ? line.substr(0, line.size() - 1) : line);
  }
  if (names.size() == 10) return names;
  return {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
}

std::shared_ptr<TensorDataset> Cifar10::dataset() const {
  return std::make_shared<TensorDataset>(images, labels);
}

Cifar10Splits load_cifar10_posattn(const std::filesystem::path& dir, uint64_t seed, double val_fraction) {
  Cifar10Splits out{load_cifar10_train(dir, PixelRange::Symmetric), {}};
  out.parts = random_split(out.all.dataset(), val_fraction, seed);
  return out;
}

}  // namespace posgrad
