// FolderLock: see folder_lock.h.
#include "apps/common/folder_lock.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/common/cli.h"
#include "tensor/error.h"

namespace posgrad::apps {

namespace fs = std::filesystem;

namespace {

// This process's command line, shell-quoted, from /proc/self/cmdline.
std::string own_command() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t start = 0; start < raw.size();) {
    const size_t end = raw.find('\0', start);
    args.push_back(raw.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return quoted_command(static_cast<int>(argv.size()), argv.data());
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return stamp;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// What the holder wrote into the lock file, as words for the error line.
std::string describe_holder(int fd, const fs::path& file) {
  std::string text;
  char buffer[4096];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, at);
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
    at += n;
  }
  try {
    const nlohmann::json holder = nlohmann::json::parse(text);
    std::string command = holder.at("command").get<std::string>();
    for (char& c : command)
      if (c == '\n' || c == '\r') c = ' ';
    return fmt::format("pid {} on host {} since {} ({})", holder.at("pid").get<long long>(),
                       holder.at("host").get<std::string>(), holder.at("started").get<std::string>(), command);
  } catch (const nlohmann::json::exception&) {
    return fmt::format("another process (it has not yet written who it is into '{}')", file.string());
  }
}

}  // namespace

FolderLock::FolderLock(const fs::path& folder, const std::string& what) {
  const fs::path file = folder / kFileName;
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create the lock file '{}' of {} '{}': {}", file.string(), what, folder.string(), std::strerror(errno));
  int rc;
  do rc = ::flock(fd, LOCK_EX | LOCK_NB);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int error = errno;
    const std::string holder = error == EWOULDBLOCK ? describe_holder(fd, file) : std::string();
    ::close(fd);
    if (error == EWOULDBLOCK)
      fail("{} '{}' is in use by {}; wait for it to end or stop it", what, folder.string(), holder);
    fail("cannot lock '{}' of {} '{}': {}", file.string(), what, folder.string(), std::strerror(error));
  }
  fd_ = fd;
  const std::string record = nlohmann::json{{"pid", static_cast<long long>(::getpid())},
                                            {"host", host_name()},
                                            {"started", utc_now()},
                                            {"command", own_command()}}
                                 .dump() +
                             "\n";
  // Who holds the lock is for the error of a refused writer; failing to record it is no reason
  // to give the lock up.
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t written = ::pwrite(fd_, record.data(), record.size(), 0);
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);
}

FolderLock::FolderLock(FolderLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

FolderLock& FolderLock::operator=(FolderLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

}  // namespace posgrad::apps
