// SHA-256 (FIPS 180-4), to check data files against a SHA256SUMS list (`sha256sum` format:
// "<64 hex digits>  <relative path>" per line).
// This file deliberately implements only the hash and file checks, not HMAC or other digests.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace posgrad {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::array<uint8_t, 32> digest();  // finishes the hash; the object is then spent
  std::string hex_digest();          // lowercase hex of digest()

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes hashed so far
  bool finished_ = false;
};

std::string sha256_hex(std::string_view data);
std::string sha256_file(const std::filesystem::path& path);  // of the bytes on disk (not gunzipped)

// Error naming the file and both digests unless the file's SHA-256 equals expected_hex
// (case-insensitive).
void verify_sha256(const std::filesystem::path& path, const std::string& expected_hex);

struct ChecksumResult {
  std::filesystem::path file;
  std::string expected, actual;  // actual is empty when the file could not be read
  std::string problem;           // empty when the file matches
  bool ok() const { return problem.empty(); }
};
// Checks every line of a SHA256SUMS file; paths are relative to the file's folder. A missing or
// unreadable file is reported in its result, not thrown; a malformed line is an Error.
std::vector<ChecksumResult> verify_sha256sums(const std::filesystem::path& sums_file);

}  // namespace posgrad
