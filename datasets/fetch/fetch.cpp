// The fetch steps of fetch.h: download and check each file, unpack, check the result, rename.
#include "datasets/fetch/fetch.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "datasets/fetch/safe_unpack.h"
#include "datasets/fetch/transfer_progress.h"
#include "datasets/fetch/verify.h"
#include "tensor/error.h"

namespace posgrad::fetch {

namespace fs = std::filesystem;

fs::path staging_dir(const fs::path& data_dir, const std::string& name) { return data_dir / ".posgrad-data" / name; }

namespace {

bool is_empty_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec) && fs::is_empty(p, ec);
}

// Removes what a failed run wrote: the staging folder, or, when a .part is kept for a resume, only
// the half-unpacked ready/ folder (downloads that are complete were checked and are used again);
// then folders left empty.
class Cleanup {
 public:
  Cleanup(fs::path data_dir, fs::path staging, bool created_data_dir)
      : data_dir_(std::move(data_dir)), staging_(std::move(staging)), created_data_dir_(created_data_dir) {}
  void keep_partial_downloads() { keep_partial_ = true; }
  void done() { armed_ = false; }
  ~Cleanup() {
    std::error_code ec;
    if (armed_) {
      if (keep_partial_) {
        fs::remove_all(staging_ / "ready", ec);
      } else {
        fs::remove_all(staging_, ec);
      }
    } else {
      fs::remove_all(staging_, ec);
    }
    if (is_empty_dir(staging_)) fs::remove(staging_, ec);
    if (is_empty_dir(staging_.parent_path())) fs::remove(staging_.parent_path(), ec);
    if (created_data_dir_ && is_empty_dir(data_dir_)) fs::remove(data_dir_, ec);
  }

 private:
  fs::path data_dir_, staging_;
  bool created_data_dir_;
  bool keep_partial_ = false;
  bool armed_ = true;
};

// An exclusive flock on the staging folder for the whole run: a second posgrad-data fetching the
// same dataset into the same folder stops at once instead of writing into the same .part.
class StagingLock {
 public:
  StagingLock(const fs::path& staging, const std::string& name, const fs::path& data_dir) {
    for (int tries = 0; tries < 3; ++tries) {
      std::error_code ec;
      fs::create_directories(staging, ec);
      if (ec) fail("{}: cannot create {}: {}; give a --dir where you can write", name, staging.string(), ec.message());
      fd_ = ::open(staging.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd_ < 0) fail("{}: cannot open {}: {}", name, staging.string(), std::strerror(errno));
      if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        ::close(fd_);
        if (err == EWOULDBLOCK)
          fail("{}: another posgrad-data is fetching it into {} now; wait for it to end, then rerun", name,
               data_dir.string());
        fail("{}: cannot lock {}: {}", name, staging.string(), std::strerror(err));
      }
      // The holder before us may have removed the folder after we opened it: lock the one on disk.
      struct stat held {}, on_disk {};
      if (::fstat(fd_, &held) == 0 && ::stat(staging.c_str(), &on_disk) == 0 && held.st_ino == on_disk.st_ino &&
          held.st_dev == on_disk.st_dev)
        return;
      ::close(fd_);
      fd_ = -1;
    }
    fail("{}: {} keeps changing under this run; is another program using it?", name, staging.string());
  }
  ~StagingLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  StagingLock(const StagingLock&) = delete;
  StagingLock& operator=(const StagingLock&) = delete;

 private:
  int fd_ = -1;
};

std::string normalised_base_url(const std::string& url) {
  if (url.rfind("https://", 0) != 0 && url.rfind("http://", 0) != 0)
    fail("--base-url {}: must start with https:// (or http:// for a mirror you trust)", url);
  return url.back() == '/' ? url : url + "/";
}

void say(const FetchOptions& o, const std::string& line) {
  if (o.log == nullptr) return;
  fmt::print(o.log, "{}\n", line);
  std::fflush(o.log);
}

// Downloads one file from the first URL that works; throws naming every URL tried.
void download_file(const DatasetSpec& spec, const RemoteFile& file, const std::vector<std::string>& bases,
                   const fs::path& target, const FetchOptions& o, Cleanup& cleanup) {
  std::vector<std::string> failures;
  bool resumable = false;
  for (const auto& base : bases) {
    const std::string url = base + file.name;
    DownloadOptions d = o.download;
    d.max_bytes = file.max_bytes;
    d.allow_plain_http = !o.base_url.empty() && o.base_url.rfind("http://", 0) == 0;
    std::unique_ptr<TransferProgress> progress;
    if (o.log != nullptr) {
      say(o, fmt::format("{}: downloading {}", spec.name, url));
      progress = std::make_unique<TransferProgress>("  " + file.name, o.log);
      d.progress = [&](int64_t bytes, int64_t total) { progress->update(bytes, total); };
    }
    try {
      download(url, target, d);
      if (progress) progress->finish();
      return;
    } catch (const Error& e) {
      if (progress) progress->finish();
      failures.push_back(e.what());
      std::error_code ec;
      resumable = fs::exists(partial_path(target), ec);
    }
  }
  if (resumable) cleanup.keep_partial_downloads();
  fail("{}: {} could not be downloaded: {}; {}", spec.name, file.name, fmt::join(failures, "; "),
       resumable ? "rerun the same command to resume"
                 : "check the address and the network, or give a mirror with --base-url");
}

}  // namespace

std::string fetch_dataset(const DatasetSpec& spec, const FetchOptions& o) {
  std::error_code ec;
  const fs::path final_dir = o.data_dir / spec.folder;
  std::vector<std::string> bases = spec.base_urls;
  if (!o.base_url.empty()) bases = {normalised_base_url(o.base_url)};

  if (fs::exists(fs::symlink_status(final_dir, ec))) {
    const DatasetCheck check = verify_dataset(spec, o.data_dir);
    for (const auto& f : check.files)
      if (!f.problem.empty())
        fail("{}: {} is already there but does not verify ({}: {}); move it away and rerun the fetch", spec.name,
             final_dir.string(), f.path, f.problem);
    return fmt::format("{}: already in {}, verified", spec.name, final_dir.string());
  }

  bool created_data_dir = false;
  if (!fs::is_directory(o.data_dir, ec)) {
    fs::create_directories(o.data_dir, ec);
    if (ec)
      fail("{}: cannot create the data folder {}: {}; give a --dir where you can write", spec.name,
           o.data_dir.string(), ec.message());
    created_data_dir = true;
  }
  const fs::path staging = staging_dir(o.data_dir, spec.name);
  const StagingLock lock(staging, spec.name, o.data_dir);  // released after the cleanup below
  Cleanup cleanup(o.data_dir, staging, created_data_dir);

  for (const RemoteFile& file : spec.files) {
    const fs::path target = staging / file.name;
    // A complete download that an earlier run left behind (killed while unpacking, or stopped at a
    // later file) is used again.
    std::string actual;
    if (fs::is_regular_file(target, ec) && (actual = file_digest(file.digest, target)) == file.expected) {
      say(o, fmt::format("{}: {} already downloaded", spec.name, file.name));
    } else {
      download_file(spec, file, bases, target, o, cleanup);
      actual = file_digest(file.digest, target);
    }
    if (actual != file.expected)
      fail("{}: {}: {} mismatch: expected {} (published), the download has {}; nothing was kept. The file is "
           "corrupt or is not the published one: try again, or another --base-url",
           spec.name, file.name, digest_name(file.digest), file.expected, actual);
    say(o, fmt::format("{}: {} {} OK", spec.name, file.name, digest_name(file.digest)));
  }

  const fs::path ready = staging / "ready";
  fs::remove_all(ready, ec);
  if (spec.unpack == Unpack::TarGz) {
    say(o, fmt::format("{}: unpacking {}", spec.name, spec.files[0].name));
    const fs::path archive = staging / spec.files[0].name;
    try {
      unpack_tar_gz(archive, spec.archive_folder, ready, spec.max_unpacked_bytes);
    } catch (const std::exception& e) {  // the staged archive is removed below: name it as published
      std::string why = e.what();
      if (why.rfind(archive.string() + ": ", 0) == 0) why = why.substr(archive.string().size() + 2);
      const bool disk = why.rfind("cannot write", 0) == 0;  // says itself to free space and rerun
      fail("{}: unpacking {}: {}; nothing was kept{}", spec.name, spec.files[0].name, why,
           disk ? "" : ". The archive matched its published checksum: please report this");
    }
  } else {
    fs::create_directories(ready);
    for (const RemoteFile& file : spec.files) fs::rename(staging / file.name, ready / file.name);
  }

  for (const KnownFile& known : spec.known_files) {
    const std::string actual = content_sha256(ready / known.path, known.gunzip);
    if (actual != known.sha256)
      fail("{}: {}: SHA-256 mismatch after unpacking: expected {}, got {}; nothing was kept", spec.name, known.path,
           known.sha256, actual);
  }

  fs::rename(ready, final_dir, ec);
  if (ec) fail("{}: cannot move the finished folder to {}: {}", spec.name, final_dir.string(), ec.message());
  cleanup.done();
  size_t count = 0;
  for (const auto& e : fs::recursive_directory_iterator(final_dir, ec)) count += e.is_regular_file() ? 1 : 0;
  return fmt::format("{}: {} file{} in {}, verified", spec.name, count, count == 1 ? "" : "s", final_dir.string());
}

}  // namespace posgrad::fetch
