// TFRecord framing, the container of TensorBoard event files: each record is
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes |
//   data | uint32 masked CRC-32C of the data
// with mask(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8. CRC-32C (Castagnoli) comes from
// Boost.CRC: Debian 12 ships no C/C++ CRC-32C library (no libcrc32c-dev; zlib has only CRC-32).
//
// Deliberately does not: know what the records hold (tensorboard_events.h), compress, or index.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace posgrad::apps {

// CRC-32C of `bytes` (crc32c("123456789") == 0xE3069283).
uint32_t crc32c(std::string_view bytes);
// The masked CRC-32C that TFRecord stores.
uint32_t masked_crc32c(std::string_view bytes);
// `data` framed as one record.
std::string tfrecord_frame(std::string_view data);
// The records of a TFRecord file, in order. A cut record or a CRC that does not match is an
// error naming the file and the record's byte offset.
std::vector<std::string> read_tfrecords(const std::filesystem::path& path);

}  // namespace posgrad::apps
