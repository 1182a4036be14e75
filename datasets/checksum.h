// File and string digests (SHA-256, MD5) computed with OpenSSL's libcrypto, and the checks built
// on them: one file against an expected digest, and a `sha256sum`-format list ("<64 hex digits>
// <relative path>" per line, as in the data folder's SHA256SUMS).
// This file deliberately implements no hash itself (libcrypto's EVP interface does), and offers
// no HMAC, signatures or other digests.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace posgrad {

enum class DigestKind { Sha256, Md5 };
const char* digest_name(DigestKind kind);  // "SHA-256", "MD5"

// An incremental digest: update() any number of times, then hex() once.
class Digest {
 public:
  explicit Digest(DigestKind kind);
  ~Digest();
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;
  void update(const void* data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::string hex();  // lowercase hex; finishes the digest (a second call is an Error)

 private:
  struct Context;
  std::unique_ptr<Context> context_;
  DigestKind kind_;
};

std::string digest_hex(DigestKind kind, std::string_view data);
// Of the bytes on disk (a .gz file is hashed as it is, not gunzipped). Errors name the file.
std::string file_digest(DigestKind kind, const std::filesystem::path& path);

std::string sha256_hex(std::string_view data);
std::string sha256_file(const std::filesystem::path& path);
std::string md5_hex(std::string_view data);

// Error naming the file, the digest and both values unless the file's digest equals expected_hex
// (case-insensitive).
void verify_file_digest(DigestKind kind, const std::filesystem::path& path, const std::string& expected_hex);
inline void verify_sha256(const std::filesystem::path& path, const std::string& expected_hex) {
  verify_file_digest(DigestKind::Sha256, path, expected_hex);
}

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
