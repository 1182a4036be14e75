// Digests through libcrypto's EVP interface (EVP_sha256, EVP_md5) and the file checks on top.
#include "datasets/checksum.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "tensor/error.h"

namespace posgrad {

namespace {
std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const EVP_MD* evp_of(DigestKind kind) { return kind == DigestKind::Sha256 ? EVP_sha256() : EVP_md5(); }
}  // namespace

const char* digest_name(DigestKind kind) { return kind == DigestKind::Sha256 ? "SHA-256" : "MD5"; }

struct Digest::Context {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool finished = false;
  ~Context() { EVP_MD_CTX_free(ctx); }
};

Digest::Digest(DigestKind kind) : context_(std::make_unique<Context>()), kind_(kind) {
  if (context_->ctx == nullptr || EVP_DigestInit_ex(context_->ctx, evp_of(kind), nullptr) != 1)
    fail("{}: libcrypto could not start a digest", digest_name(kind));
}

Digest::~Digest() = default;

void Digest::update(const void* data, size_t size) {
  if (context_->finished) fail("{}: update after hex()", digest_name(kind_));
  if (size == 0) return;
  if (EVP_DigestUpdate(context_->ctx, data, size) != 1) fail("{}: libcrypto digest update failed", digest_name(kind_));
}

std::string Digest::hex() {
  if (context_->finished) fail("{}: hex() called twice", digest_name(kind_));
  context_->finished = true;
  unsigned char bytes[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(context_->ctx, bytes, &n) != 1) fail("{}: libcrypto digest failed", digest_name(kind_));
  static const char* digits = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (unsigned int i = 0; i < n; ++i) {
    s[2 * i] = digits[bytes[i] >> 4];
    s[2 * i + 1] = digits[bytes[i] & 15];
  }
  return s;
}

std::string digest_hex(DigestKind kind, std::string_view data) {
  Digest d(kind);
  d.update(data);
  return d.hex();
}

std::string sha256_hex(std::string_view data) { return digest_hex(DigestKind::Sha256, data); }
std::string md5_hex(std::string_view data) { return digest_hex(DigestKind::Md5, data); }

std::string file_digest(DigestKind kind, const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail("{}: file not found", path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open", path.string());
  Digest d(kind);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    d.update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) fail("{}: read error", path.string());
  return d.hex();
}

std::string sha256_file(const std::filesystem::path& path) { return file_digest(DigestKind::Sha256, path); }

void verify_file_digest(DigestKind kind, const std::filesystem::path& path, const std::string& expected_hex) {
  const std::string actual = file_digest(kind, path);
  if (actual != lower(expected_hex))
    fail("{}: {} mismatch: expected {}, file has {}", path.string(), digest_name(kind), lower(expected_hex), actual);
}

std::vector<ChecksumResult> verify_sha256sums(const std::filesystem::path& sums_file) {
  std::ifstream in(sums_file);
  if (!in) fail("{}: cannot open", sums_file.string());
  const std::filesystem::path base = sums_file.parent_path();
  std::vector<ChecksumResult> results;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    // "<hex>  <name>" (text mode) or "<hex> *<name>" (binary mode)
    if (line.size() < 67 || line[64] != ' ' || (line[65] != ' ' && line[65] != '*') ||
        !std::all_of(line.begin(), line.begin() + 64, [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
      fail("{}:{}: not a sha256sum line: \"{}\"", sums_file.string(), line_no, line);
    ChecksumResult r;
    r.expected = lower(line.substr(0, 64));
    r.file = base / line.substr(66);
    try {
      r.actual = sha256_file(r.file);
      if (r.actual != r.expected) r.problem = "SHA-256 mismatch";
    } catch (const Error& e) {
      r.problem = e.what();
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace posgrad
