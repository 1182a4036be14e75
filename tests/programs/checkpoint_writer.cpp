// checkpoint_writer: a training loop that writes RunCheckpoints as fast as it can, for the crash
// tests in tests/apps/test_checkpoint_crashes.cpp (they kill it with SIGKILL at random moments,
// or give it a file-size limit, and check what it left on disk).
//
//   checkpoint_writer RUN_DIR [STEPS [FSIZE_LIMIT_BYTES]]
//
// Resumes RUN_DIR when it holds a `latest` checkpoint, then trains TinyRun (tests/programs/
// tiny_run.h): save every 2nd step, offer_best every 3rd. Runs until STEPS (0 or absent: forever).
// With FSIZE_LIMIT_BYTES it sets RLIMIT_FSIZE and ignores SIGXFSZ first, so a write past the
// limit fails with EFBIG as on a full disk. Prints "restored step N" once; errors go to stderr as
// one "error: ..." line and exit 1.
// Deliberately not an app: no settings, no metrics, no figures.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

#include <sys/resource.h>

#include <fmt/format.h>

#include "apps/common/run_checkpoints.h"
#include "apps/common/run_dir.h"
#include "tests/programs/tiny_run.h"

namespace fs = std::filesystem;
using namespace posgrad;
using namespace posgrad::apps;

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    fmt::print(stderr, "usage: checkpoint_writer RUN_DIR [STEPS [FSIZE_LIMIT_BYTES]]\n");
    return 2;
  }
  try {
    const fs::path run_dir = argv[1];
    const int64_t steps = argc > 2 ? std::stoll(argv[2]) : 0;
    if (argc > 3) {
      std::signal(SIGXFSZ, SIG_IGN);
      rlimit limit{};
      if (::getrlimit(RLIMIT_FSIZE, &limit) != 0) fail("getrlimit(RLIMIT_FSIZE) failed");
      limit.rlim_cur = static_cast<rlim_t>(std::stoll(argv[3]));
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) fail("setrlimit(RLIMIT_FSIZE, {}) failed", argv[3]);
    }
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
