// atomic_write: see atomic_write.h.
#include "apps/common/atomic_write.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

#include "tensor/error.h"

namespace posgrad::apps {

namespace fs = std::filesystem;

void atomic_write_text(const fs::path& path, std::string_view bytes) {
  POSGRAD_CHECK(!path.empty(), "atomic_write_text: empty path");
  const fs::path parent = path.parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    POSGRAD_CHECK(!ec, "cannot create folder '{}': {}", parent.string(), ec.message());
  }
  const fs::path tmp = fs::path(path.string() + ".tmp." + std::to_string(::getpid()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot write '{}': {}", tmp.string(), std::strerror(errno));

  auto give_up = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail("cannot {} '{}': {}", what, tmp.string(), std::strerror(err));
  };
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      give_up("write");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) give_up("fsync");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot close '{}': {}", tmp.string(), std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot rename '{}' to '{}': {}", tmp.string(), path.string(), std::strerror(err));
  }
  // Best effort: make the rename itself durable.
  const int dfd = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace posgrad::apps
