// Atomic whole-file writes and whole-file reads: see atomic_file.h.
#include "nn/atomic_file.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensor/error.h"

namespace posgrad {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// Closes `fd` unless released; removes `tmp` unless committed.
struct TempFile {
  fs::path path;
  int fd = -1;
  bool committed = false;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!committed) ::unlink(path.c_str());
  }
};

}  // namespace

void write_file_atomically(const fs::path& path, std::string_view bytes) {
  if (path.empty()) fail("write_file_atomically: empty path");
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  TempFile tmp;
  tmp.path = fs::path(path.string() + ".tmp." + std::to_string(::getpid()));
  tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (tmp.fd < 0) {
    const int err = errno;
    tmp.committed = true;  // nothing was created
    fail("cannot write '{}': cannot create the temporary file '{}': {}", path.string(),
         tmp.path.string(), errno_text(err));
  }
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(tmp.fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write '{}': writing the temporary file failed: {}", path.string(), errno_text(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(tmp.fd) != 0)
    fail("cannot write '{}': fsync of the temporary file failed: {}", path.string(), errno_text(errno));
  const int fd = tmp.fd;
  tmp.fd = -1;
  if (::close(fd) != 0)
    fail("cannot write '{}': closing the temporary file failed: {}", path.string(), errno_text(errno));
  if (::rename(tmp.path.c_str(), path.c_str()) != 0)
    fail("cannot write '{}': renaming '{}' over it failed: {}", path.string(), tmp.path.string(),
         errno_text(errno));
  tmp.committed = true;
  // Make the rename itself durable.
  try {
    sync_directory(dir);
  } catch (const Error& e) {
    fail("wrote '{}' but {}", path.string(), e.what());
  }
}

void sync_directory(const fs::path& dir) {
  // Some filesystems cannot fsync a directory (EINVAL): the entries are in place then, so that is
  // not an error.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) fail("cannot open the directory '{}' to fsync it: {}", dir.string(), errno_text(errno));
  const int rc = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL) fail("fsync of the directory '{}' failed: {}", dir.string(), errno_text(err));
}

std::string read_file_bytes(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot read '{}': {}", path.string(), errno_text(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail("cannot read '{}': {}", path.string(), errno_text(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    fail("cannot read '{}': it is a directory", path.string());
  }
  std::string out;
  if (st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      fail("cannot read '{}': {}", path.string(), errno_text(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace posgrad
