// Data folder verification (see verify.h); .gz contents are streamed through zlib.
#include "datasets/fetch/verify.h"

#include <zlib.h>

#include <algorithm>
#include <set>

#include "tensor/error.h"

namespace posgrad::fetch {

namespace fs = std::filesystem;

bool DatasetCheck::ok() const {
  if (!present) return false;
  for (const auto& f : files)
    if (!f.problem.empty()) return false;
  return true;
}

std::string content_sha256(const fs::path& path, bool gunzip) {
  if (!gunzip) return sha256_file(path);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) fail("{}: file not found", path.string());
  gzFile in = gzopen(path.c_str(), "rb");
  if (in == nullptr) fail("{}: cannot open", path.string());
  Digest digest(DigestKind::Sha256);
  std::vector<char> buf(1 << 20);
  for (;;) {
    const int n = gzread(in, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int code = 0;
      const std::string why = gzerror(in, &code);
      gzclose(in);
      fail("{}: corrupt or truncated gzip data ({})", path.string(), why);
    }
    if (n == 0) break;
    digest.update(buf.data(), static_cast<size_t>(n));
  }
  // A stream cut short ends without a read error: gzclose reports it (Z_BUF_ERROR).
  if (gzclose(in) != Z_OK) fail("{}: truncated gzip data", path.string());
  return digest.hex();
}

DatasetCheck verify_dataset(const DatasetSpec& spec, const fs::path& data_dir) {
  DatasetCheck check;
  check.name = spec.name;
  const fs::path folder = data_dir / spec.folder;
  std::error_code ec;
  check.present = fs::is_directory(folder, ec);
  if (!check.present) return check;
  std::set<std::string> known;
  for (const auto& k : spec.known_files) {
    known.insert(k.path);
    FileCheck f{spec.folder + "/" + k.path, ""};
    if (!fs::exists(folder / k.path, ec)) {
      f.problem = "missing";
      check.files.push_back(f);
      continue;
    }
    try {
      const std::string actual = content_sha256(folder / k.path, k.gunzip);
      if (actual != k.sha256)
        f.problem = fmt::format("SHA-256{} mismatch: expected {}, file has {}", k.gunzip ? " (of the gunzipped contents)" : "",
                                k.sha256, actual);
    } catch (const Error& e) {
      f.problem = e.what();
    }
    check.files.push_back(f);
  }
  std::vector<std::string> others;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (!known.count(name)) others.push_back(name);
  }
  std::sort(others.begin(), others.end());
  for (const auto& name : others) check.files.push_back({spec.folder + "/" + name, "", false});
  return check;
}

}  // namespace posgrad::fetch
