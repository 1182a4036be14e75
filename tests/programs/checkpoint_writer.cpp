// checkpoint_writer: a training loop that writes RunCheckpoints as fast as it can, for the crash
// tests in tests/apps/test_checkpoint_crashes.cpp (they kill it with SIGKILL at random moments,
// or give it a file-size limit, and check what it left on disk).
//
//   checkpoint_writer RUN_DIR [STEPS [FSIZE_LIMIT_BYTES]]
//   checkpoint_writer --serve RUN_DIR
//
// Resumes RUN_DIR when it holds a `latest` checkpoint, then trains TinyRun (tests/programs/
// tiny_run.h): save every 2nd step, offer_best every 3rd. Runs until STEPS (0 or absent: forever).
// With FSIZE_LIMIT_BYTES it sets RLIMIT_FSIZE and ignores SIGXFSZ first, so a write past the
// limit fails with EFBIG as on a full disk. Prints "restored step N" once; errors go to stderr as
// one "error: ..." line and exit 1.
//
// --serve: for each line "go" on stdin, forks a child that does the above forever (it prints
// "restored step N") and prints "pid P"; when that child has ended (the test kills it), prints
// "ended S" (S: the signal that ended it, or 0 and its exit code as "exited C"). One process start
// (about 0.2 s here: the CUDA libraries load) then serves every trial; the children start from a
// process that has used no OpenMP thread, so forking is safe. Run it with OMP_NUM_THREADS=1.
// Deliberately not an app: no settings, no metrics, no figures.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

#include <iostream>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "apps/common/run_checkpoints.h"
#include "apps/common/run_dir.h"
#include "tests/programs/tiny_run.h"

namespace fs = std::filesystem;
using namespace posgrad;
using namespace posgrad::apps;

namespace {

// Resumes `run_dir` if it has a checkpoint and trains until `steps` (0: forever).
int write_checkpoints(const fs::path& run_dir, int64_t steps) {
  try {
    RunDir run(run_dir, ExistingRun::Append);
    test::TinyRun t;
    RunCheckpoints checkpoints(run, t.model, t.opt, t.gen, {.metric = "score", .higher_is_better = true});
    TrainingPosition at;
    if (fs::exists(run.path() / "checkpoints" / "latest")) at = checkpoints.restore_latest();
    fmt::print("restored step {}\n", at.step);
    std::fflush(stdout);
    while (steps == 0 || at.step < steps) {
      t.step();
      ++at.step;
      ++at.batch_in_epoch;
      if (at.step % test::TinyRun::kSaveEvery == 0) checkpoints.save(at);
      if (at.step % test::TinyRun::kBestEvery == 0) checkpoints.offer_best(at, test::TinyRun::metric(at.step));
    }
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}

int serve(const fs::path& run_dir) {
  for (std::string line; std::getline(std::cin, line);) {
    if (line != "go") {
      fmt::print(stderr, "error: --serve expects lines 'go', got '{}'\n", line);
      return 2;
    }
    std::fflush(stdout);
    const pid_t pid = ::fork();
    if (pid < 0) {
      fmt::print(stderr, "error: fork failed\n");
      return 1;
    }
    if (pid == 0) {
      const int code = write_checkpoints(run_dir, 0);
      std::fflush(stdout);
      ::_exit(code);
    }
    fmt::print("pid {}\n", pid);
    std::fflush(stdout);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) fmt::print("ended {}\n", WTERMSIG(status));
    else fmt::print("ended 0 exited {}\n", WEXITSTATUS(status));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--serve") return serve(argv[2]);
  if (argc < 2 || argc > 4) {
    fmt::print(stderr, "usage: checkpoint_writer RUN_DIR [STEPS [FSIZE_LIMIT_BYTES]] | --serve RUN_DIR\n");
    return 2;
  }
  try {
    const int64_t steps = argc > 2 ? std::stoll(argv[2]) : 0;
    if (argc > 3) {
      std::signal(SIGXFSZ, SIG_IGN);
      rlimit limit{};
      if (::getrlimit(RLIMIT_FSIZE, &limit) != 0) fail("getrlimit(RLIMIT_FSIZE) failed");
      limit.rlim_cur = static_cast<rlim_t>(std::stoll(argv[3]));
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) fail("setrlimit(RLIMIT_FSIZE, {}) failed", argv[3]);
    }
    return write_checkpoints(argv[1], steps);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
