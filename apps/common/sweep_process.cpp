// Sweep runs as child processes and the stop signals (see sweep_process.h).
#include "apps/common/sweep_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

#include "tensor/error.h"

extern char** environ;

namespace posgrad::apps {

namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

volatile std::sig_atomic_t g_stop_signal = 0;
volatile std::sig_atomic_t g_child = 0;  // the run in progress (0: none)
sigset_t g_caught;                        // the stop signals this process handles

void on_stop_signal(int signal) {
  const int saved_errno = errno;
  if (g_stop_signal == 0) g_stop_signal = signal;
  const pid_t child = g_child;
  if (child > 0) ::kill(child, signal);
  errno = saved_errno;
}

// Blocks the caught stop signals for its lifetime, so that starting and reaping a child and
// setting g_child happen as one step for the handler.
class StopSignalsBlocked {
 public:
  StopSignalsBlocked() { ::pthread_sigmask(SIG_BLOCK, &g_caught, &previous_); }
  ~StopSignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  StopSignalsBlocked(const StopSignalsBlocked&) = delete;
  StopSignalsBlocked& operator=(const StopSignalsBlocked&) = delete;

 private:
  sigset_t previous_;
};

// The spawn attributes of a run: no blocked signals, and the caught stop signals back to their
// default action (a run is ended by them, not handled as the sweep handles them).
class SpawnSettings {
 public:
  explicit SpawnSettings(int log_fd) {
    ::posix_spawnattr_init(&attr_);
    sigset_t none;
    sigemptyset(&none);
    ::posix_spawnattr_setsigmask(&attr_, &none);
    ::posix_spawnattr_setsigdefault(&attr_, &g_caught);
    ::posix_spawnattr_setflags(&attr_, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    ::posix_spawn_file_actions_init(&files_);
    ::posix_spawn_file_actions_adddup2(&files_, log_fd, STDOUT_FILENO);
    ::posix_spawn_file_actions_adddup2(&files_, log_fd, STDERR_FILENO);
  }
  ~SpawnSettings() {
    ::posix_spawn_file_actions_destroy(&files_);
    ::posix_spawnattr_destroy(&attr_);
  }
  SpawnSettings(const SpawnSettings&) = delete;
  SpawnSettings& operator=(const SpawnSettings&) = delete;
  const posix_spawnattr_t* attr() const { return &attr_; }
  const posix_spawn_file_actions_t* files() const { return &files_; }

 private:
  posix_spawnattr_t attr_;
  posix_spawn_file_actions_t files_;
};

}  // namespace

void catch_stop_signals() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  sigemptyset(&g_caught);
  for (int signal : kStopSignals) {
    struct sigaction current {};
    ::sigaction(signal, nullptr, &current);
    if (signal == SIGHUP && current.sa_handler == SIG_IGN) continue;  // nohup: keep ignoring it
    sigaddset(&g_caught, signal);
  }
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  action.sa_mask = g_caught;
  action.sa_flags = SA_RESTART;
  for (int signal : kStopSignals)
    if (sigismember(&g_caught, signal)) ::sigaction(signal, &action, nullptr);
}

int stop_signal() { return g_stop_signal; }

std::string signal_name(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return fmt::format("signal {}", signal);
  }
}

int run_child_logged(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  POSGRAD_CHECK(!argv.empty(), "run_child_logged: no program to run");
  std::error_code ec;
  std::filesystem::create_directories(log.parent_path(), ec);
  if (ec) fail("cannot create folder '{}' for the log '{}': {}", log.parent_path().string(), log.string(), ec.message());
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) fail("cannot open the log '{}': {}", log.string(), std::strerror(errno));
  std::vector<char*> raw;
  for (const std::string& a : argv) raw.push_back(const_cast<char*>(a.c_str()));
  raw.push_back(nullptr);
  pid_t pid = 0;
  {
    StopSignalsBlocked blocked;
    if (g_stop_signal != 0) {  // stopped before this run began: do not start it
      ::close(log_fd);
      return 128 + g_stop_signal;
    }
    const SpawnSettings spawn(log_fd);
    const int rc = ::posix_spawnp(&pid, raw[0], spawn.files(), spawn.attr(), raw.data(), environ);
    ::close(log_fd);
    if (rc != 0) fail("cannot start '{}': {}", argv[0], std::strerror(rc));
    g_child = pid;
  }  // a stop signal that came while blocked is handled here, and passed on to the child
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0)
    if (errno != EINTR) fail("waiting for '{}' (pid {}): {}", argv[0], pid, std::strerror(errno));
  int status = 0;
  {
    StopSignalsBlocked blocked;  // forget the child before its pid is free for reuse
    g_child = 0;
    while (::waitpid(pid, &status, 0) < 0)
      if (errno != EINTR) fail("waiting for '{}' (pid {}): {}", argv[0], pid, std::strerror(errno));
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

void die_of_stop_signal() {
  const int signal = g_stop_signal;
  if (signal == 0) std::_Exit(1);  // misuse: no stop signal to die of
  std::fflush(stdout);
  std::fflush(stderr);
  ::signal(signal, SIG_DFL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signal);
  ::pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  ::raise(signal);
  std::_Exit(128 + signal);  // the default action of every stop signal ends the process
}

}  // namespace posgrad::apps
