// TFRecord framing: see tfrecord.h.
#include "apps/common/tfrecord.h"

#include <fstream>
#include <iterator>

#include <boost/crc.hpp>

#include "tensor/error.h"

namespace posgrad::apps {

namespace {

// CRC-32C: polynomial 0x1EDC6F41, reflected, initial value and final XOR all ones.
using Crc32c = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

std::string little_endian(uint64_t value, int bytes) {
  std::string out(static_cast<size_t>(bytes), '\0');
  for (int i = 0; i < bytes; ++i) out[static_cast<size_t>(i)] = static_cast<char>((value >> (8 * i)) & 0xFF);
  return out;
}

uint64_t read_little_endian(std::string_view bytes) {
  uint64_t value = 0;
  for (size_t i = bytes.size(); i-- > 0;) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  Crc32c crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t crc = crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tfrecord_frame(std::string_view data) {
  const std::string length = little_endian(data.size(), 8);
  std::string record = length;
  record += little_endian(masked_crc32c(length), 4);
  record += data;
  record += little_endian(masked_crc32c(data), 4);
  return record;
}

std::vector<std::string> read_tfrecords(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read '{}'", path.string());
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string_view all(file);
  std::vector<std::string> records;
  size_t at = 0;
  while (at < all.size()) {
    if (all.size() - at < 12) fail("'{}': the record at byte {} is cut short (no length)", path.string(), at);
    const std::string_view length = all.substr(at, 8);
    if (read_little_endian(all.substr(at + 8, 4)) != masked_crc32c(length))
      fail("'{}': the record at byte {} has a wrong length checksum", path.string(), at);
    const uint64_t size = read_little_endian(length);
    if (size > all.size() - at - 12 || all.size() - at - 12 - size < 4)
      fail("'{}': the record at byte {} is cut short ({} data bytes announced)", path.string(), at, size);
    const std::string_view data = all.substr(at + 12, size);
    if (read_little_endian(all.substr(at + 12 + size, 4)) != masked_crc32c(data))
      fail("'{}': the record at byte {} has a wrong data checksum", path.string(), at);
    records.emplace_back(data);
    at += 12 + size + 4;
  }
  return records;
}

}  // namespace posgrad::apps
