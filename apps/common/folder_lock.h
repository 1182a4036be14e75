// FolderLock: the exclusive lock a process holds on the folder it writes (a run folder, a sweep
// folder), so that a second writer refuses at once instead of mixing its files with the first's.
//
// The lock is flock(2) on <folder>/.lock, held for as long as the FolderLock lives. The kernel
// drops it when the process ends in any way (exit, exception, crash, kill -9), so a dead run never
// leaves a stale lock: the .lock file stays behind, unlocked, and the next writer takes it. The
// holder writes who it is into the file, one JSON line (pid, host, start time in UTC, command
// line), and a refused writer's error names it:
//   run folder 'runs/x' is in use by pid 4242 on host lab1 since 2026-11-26 18:30:05 UTC
//   (count24 --out runs/x); wait for it to end or stop it
// The descriptor is close-on-exec: processes the holder starts (a sweep's runs) do not hold it.
//
// Deliberately does not: wait for the holder, break a lock, lock readers out (jobs that only read a
// run take no lock; docs/apps.md says which), or promise more than flock(2) gives on a network
// filesystem.
#pragma once

#include <filesystem>
#include <string>

namespace posgrad::apps {

class FolderLock {
 public:
  // The lock file's name inside the folder.
  static constexpr const char* kFileName = ".lock";

  FolderLock() = default;
  // Locks `folder` (which must exist) or throws posgrad::Error: "<what> '<folder>' is in use by
  // ..." naming the holder, or naming the lock file that cannot be created or locked.
  FolderLock(const std::filesystem::path& folder, const std::string& what);
  ~FolderLock();
  FolderLock(FolderLock&& other) noexcept;
  FolderLock& operator=(FolderLock&& other) noexcept;
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace posgrad::apps
