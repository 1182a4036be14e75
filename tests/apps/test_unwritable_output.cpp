// Every job of every app given an output it cannot write ends with one "<app>: error: ..." line
// and a non-zero exit status, never on an uncaught exception (terminate, SIGABRT, exit 134):
// count24 train and eval, posattn train, eval and figures, charlm train, eval and sample, and
// posgrad-sweep (runs and --table-only). The unwritable places: a path under a regular file
// (for everyone, root included), and a read-only folder (mode 0555; root writes there anyway, so
// for root sysfs's /sys, where no one may create a file), each used only when a probe shows it
// really cannot be written. Jobs that write no run folder (eval, sample) refuse --out.
// Deliberately not here: what each job writes when it can (the apps' own tests).
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "datasets/data_dir.h"
#include "tests/apps/app_process.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::read_text;
using posgrad::test::TempDir;

// The file's helpers and suites in a namespace of their own: in a unity batch (cmake/build_speed.cmake)
// other test files with helpers of the same names (kApp, kTiny, run, ...) come before or after it.
namespace unwritable_output_tests {
namespace {

// Folders nothing can be created in: <tmp>/a_file/out (a_file a regular file), and a read-only
// folder when one is found that this process really cannot write.
std::vector<fs::path> unwritable_outputs(const fs::path& tmp) {
  std::ofstream(tmp / "a_file") << "not a folder\n";
  std::vector<fs::path> out{tmp / "a_file" / "out"};
  const fs::path read_only = tmp / "read_only";
  fs::create_directories(read_only);
  fs::permissions(read_only, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                 fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  for (const fs::path& candidate : {read_only, fs::path("/sys")}) {
    const fs::path probe = candidate / ("posgrad_probe_" + std::to_string(::getpid()));
    if (::mkdir(probe.c_str(), 0755) == 0) {  // writable after all (root ignores the mode)
      ::rmdir(probe.c_str());
      continue;
    }
    if (fs::is_directory(candidate)) {
      out.push_back(candidate / "out");
      break;
    }
  }
  BOOST_TEST_MESSAGE("unwritable outputs: " << out.size() << (out.size() == 2 ? "" : " (no read-only folder found)"));
  return out;
}

// Runs `app args`; it must exit (not die of a signal) with a non-zero status other than 134, and
// its output must hold exactly one line "<app>: error..." which contains `expected`, and no
// "terminate called".
void expect_one_error_line(const std::string& app, const std::string& args, const fs::path& log,
                           const std::string& expected) {
  const int rc = posgrad::test::run_app(fs::path(POSGRAD_BIN_DIR) / app, args, log, "OMP_NUM_THREADS=1 ");
  const std::string text = read_text(log);
  BOOST_TEST_CONTEXT(app << " " << args << "\n" << text) {
    BOOST_TEST(rc > 0, "exit status " << rc << " (-1: ended by a signal)");
    BOOST_TEST(rc != 134);
    BOOST_TEST(text.find("terminate called") == std::string::npos);
    std::istringstream lines(text);
    int error_lines = 0;
    for (std::string line; std::getline(lines, line);)
      if (line.rfind(app + ": error", 0) == 0) {
        ++error_lines;
        BOOST_TEST(line.find(expected) != std::string::npos, "'" << expected << "' not in: " << line);
      }
    BOOST_TEST(error_lines == 1);
  }
}

int run_ok(const std::string& app, const std::string& args, const fs::path& log) {
  return posgrad::test::run_app(fs::path(POSGRAD_BIN_DIR) / app, args, log, "OMP_NUM_THREADS=1 ");
}

bool cifar_present() {
  try {
    const std::optional<fs::path> dir = posgrad::try_find_data_dir();
    return dir && fs::is_directory(*dir / "cifar10");
  } catch (const std::exception&) {
    return false;
  }
}

const std::string kCount24Tiny =
    "-Dtrain.steps=4 -Dtrain.checkpoint_every=2 -Dtrain.eval_every=2 -Ddata.train_size=1000 -Ddata.test_size=100";
const std::string kPosattnTiny =
    "-Ddata.image_size=8 -Ddata.small_dataset=200 -Dmodel.layers=1 -Dmodel.width=16 -Dmodel.heads=2 "
    "-Dmodel.ff_width=16 -Dmodel.output_hidden=16 -Dtrain.epochs=1 -Dtrain.eval_batch_size=50";

}  // namespace

BOOST_AUTO_TEST_SUITE(unwritable_output)

BOOST_AUTO_TEST_CASE(count24_train_and_eval) {
  TempDir tmp;
  for (const fs::path& out : unwritable_outputs(tmp.path()))
    expect_one_error_line("count24", "train " + kCount24Tiny + " --out " + out.string(), tmp.path() / "train.txt",
                          out.string());
  const fs::path run = tmp.path() / "run";
  BOOST_REQUIRE_MESSAGE(run_ok("count24", kCount24Tiny + " --out " + run.string(), tmp.path() / "run.txt") == 0,
                        read_text(tmp.path() / "run.txt"));
  // eval writes nothing: an --out given to it is refused, not silently ignored.
  expect_one_error_line("count24", "--out " + (tmp.path() / "a_file" / "out").string() + " eval " + run.string(),
                        tmp.path() / "eval.txt", "--out");
}

BOOST_AUTO_TEST_CASE(posattn_train_eval_and_figures) {
  if (!cifar_present()) {
    BOOST_TEST_MESSAGE("skipped: CIFAR-10 not found (set " << posgrad::kDataDirEnv << ")");
    return;
  }
  TempDir tmp;
  for (const fs::path& out : unwritable_outputs(tmp.path()))
    expect_one_error_line("posattn", "train " + kPosattnTiny + " --out " + out.string(), tmp.path() / "train.txt",
                          out.string());
  const fs::path run = tmp.path() / "run";
  BOOST_REQUIRE_MESSAGE(run_ok("posattn", kPosattnTiny + " --out " + run.string(), tmp.path() / "run.txt") == 0,
                        read_text(tmp.path() / "run.txt"));
  expect_one_error_line("posattn", "--out " + (tmp.path() / "a_file" / "out").string() + " eval " + run.string(),
                        tmp.path() / "eval_out.txt", "--out");
  // eval writes RUN/eval-val-best.json and figures RUN/figures/: each in the way of a folder or a file.
  fs::remove(run / "eval-val-best.json");
  fs::create_directories(run / "eval-val-best.json");
  expect_one_error_line("posattn", "eval " + run.string(), tmp.path() / "eval.txt", "eval-val-best.json");
  std::ofstream(run / "figures") << "not a folder\n";
  expect_one_error_line("posattn", "figures " + run.string() + " --images 1", tmp.path() / "figures.txt",
                        (run / "figures").string());
}

BOOST_AUTO_TEST_CASE(charlm_train_eval_and_sample) {
  TempDir tmp;
  const fs::path text = tmp.path() / "text.txt";
  {
    std::ofstream out(text);
    for (int i = 0; i < 60; ++i) out << (i % 2 ? "the quick brown fox jumps over the lazy dog\n" : "to be or not to be\n");
  }
  const std::string tiny = "-Ddata.path=" + text.string() +
                           " -Dmodel.layers=1 -Dmodel.width=16 -Dmodel.heads=2 -Dmodel.ff_width=32 -Dmodel.max_span=32 "
                           "-Dmodel.span_ramp=8 -Dmodel.trim_granularity=8 -Dmodel.cache_margin=8 -Dtrain.batch_size=4 "
                           "-Dtrain.segment=16 -Dtrain.warmup=2 -Dtrain.log_every=2 -Dtrain.eval_every=4 "
                           "-Dtrain.checkpoint_every=4 -Deval.batch=2 -Dtrain.steps=4";
  const std::vector<fs::path> outputs = unwritable_outputs(tmp.path());
  for (const fs::path& out : outputs)
    expect_one_error_line("charlm", "train " + tiny + " --out " + out.string(), tmp.path() / "train.txt", out.string());
  const fs::path run = tmp.path() / "run";
  BOOST_REQUIRE_MESSAGE(run_ok("charlm", tiny + " --out " + run.string(), tmp.path() / "run.txt") == 0,
                        read_text(tmp.path() / "run.txt"));
  const std::string under_file = (tmp.path() / "a_file" / "out").string();
  expect_one_error_line("charlm", "--out " + under_file + " eval " + run.string(), tmp.path() / "eval.txt", "--out");
  expect_one_error_line("charlm", "--out " + under_file + " sample --checkpoint " + run.string() + " --tokens 5",
                        tmp.path() / "sample_out.txt", "--out");
  for (const fs::path& out : outputs)
    expect_one_error_line("charlm", "sample --checkpoint " + run.string() + " --tokens 5 --figure " + (out / "a.png").string(),
                          tmp.path() / "sample.txt", out.string());
}

BOOST_AUTO_TEST_CASE(posgrad_sweep_runs_and_tables) {
  TempDir tmp;
  const fs::path file = tmp.path() / "tiny.yaml";
  std::ofstream(file) << "app: count24\nset: {train.steps: 2, data.train_size: 500, data.test_size: 100}\n"
                         "metric: test_accuracy\nseeds: [1]\n";
  for (const fs::path& out : unwritable_outputs(tmp.path())) {
    expect_one_error_line("posgrad-sweep", file.string() + " --out " + out.string(), tmp.path() / "sweep.txt",
                          out.string());
    BOOST_TEST(read_text(tmp.path() / "sweep.txt").find("starting") == std::string::npos, "a run was started");
    expect_one_error_line("posgrad-sweep", file.string() + " --out " + out.string() + " --table-only",
                          tmp.path() / "table.txt", out.string());
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unwritable_output_tests
