// The benchmarks' command lines (bench/*.cpp on bench/bench_cli.h): --help lists every option of
// the benchmark's Usage line and exits 0; a repeated option takes its last value; an unknown
// option, a value that is not a number and a count of 0 repetitions each stop it with one
// "<benchmark>: error: ..." line and exit 2, before any work; a bad --device names the device.
// Skipped, with the reason, when the benchmarks were not built (POSGRAD_BENCH=OFF).
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/apps/app_process.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::read_text;
using posgrad::test::TempDir;

namespace {

struct Bench {
  std::string name;
  std::vector<std::string> options;  // every option of its Usage line
  std::string count_option;          // an option that must be >= 1
};

const std::vector<Bench> kBenches = {
    {"bench_sgemm", {"--sizes", "--reps", "--no-torch"}, "--reps"},
    {"bench_gpu_matmul", {"--sizes", "--reps", "--no-torch"}, "--reps"},
    {"bench_transformer",
     {"--batch", "--tokens", "--width", "--heads", "--ff", "--layers", "--reps", "--warmup", "--device", "--no-torch"},
     "--reps"},
    {"bench_posattn_step",
     {"--batch", "--side", "--dims", "--span", "--reps", "--warmup", "--path", "--scheme", "--twins", "--twin-reps",
      "--twin-warmup", "--checkpoint", "--device"},
     "--reps"},
    {"bench_charlm_step",
     {"--batch", "--segment", "--max-span", "--layers", "--width", "--heads", "--ff", "--span-init-permille", "--reps",
      "--warmup", "--generate", "--context", "--no-torch", "--reference", "--fused", "--device"},
     "--reps"},
    {"bench_conv2d", {"--batch", "--channels", "--side", "--kernel", "--reps", "--warmup", "--rounds", "--no-torch"}, "--reps"},
    {"bench_attention_paths",
     {"--batch", "--width", "--heads", "--reps", "--warmup", "--cases", "--fractions", "--device", "--no-torch",
      "--no-reference"},
     "--reps"},
    {"soak_train",
     {"--steps", "--sample-every", "--warmup", "--max-growth", "--batch", "--tokens", "--seed", "--inject-leak"},
     "--steps"},
};

fs::path bench_path(const std::string& name) { return fs::path(POSGRAD_BIN_DIR) / name; }

struct benchmarks_built {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    for (const Bench& b : kBenches)
      if (!fs::exists(bench_path(b.name))) {
        boost::test_tools::assertion_result r(false);
        r.message() << "skipped: " << bench_path(b.name).string() << " not built (POSGRAD_BENCH=OFF)";
        return r;
      }
    return true;
  }
};

// `bench args` must exit 2 with a first line "<bench>: error: ..." that names `needle`.
void expect_one_error_line(const Bench& b, const std::string& args, const std::string& needle, const fs::path& log) {
  const int rc = posgrad::test::run_app(bench_path(b.name), args, log);
  const std::string out = read_text(log);
  BOOST_TEST(rc == 2, b.name << " " << args << " exited " << rc << ":\n" << out);
  const std::string first = out.substr(0, out.find('\n'));
  BOOST_TEST(first.rfind(b.name + ": error: ", 0) == 0u, b.name << " " << args << ":\n" << out);
  BOOST_TEST(first.find(needle) != std::string::npos, b.name << " " << args << " should name " << needle << ":\n" << out);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(bench_command_lines, *boost::unit_test::precondition(benchmarks_built()))

BOOST_AUTO_TEST_CASE(help_lists_every_option) {
  TempDir tmp;
  for (const Bench& b : kBenches) {
    const fs::path log = tmp.path() / (b.name + ".help.txt");
    BOOST_TEST(posgrad::test::run_app(bench_path(b.name), "--help", log) == 0, b.name << ":\n" << read_text(log));
    const std::string help = read_text(log);
    for (const std::string& option : b.options)
      BOOST_TEST(help.find(option + " ") != std::string::npos, b.name << " --help does not list " << option << ":\n" << help);
  }
}

BOOST_AUTO_TEST_CASE(bad_options_stop_with_one_error_line) {
  TempDir tmp;
  for (const Bench& b : kBenches) {
    expect_one_error_line(b, "--no-such-option 3", "--no-such-option", tmp.path() / (b.name + ".unknown.txt"));
    expect_one_error_line(b, b.count_option + " lots", b.count_option, tmp.path() / (b.name + ".nan.txt"));
    expect_one_error_line(b, b.count_option + " 0", b.count_option + ": 0 is out of range: must be >= 1",
                          tmp.path() / (b.name + ".zero.txt"));
  }
}

// The docs test appends quick settings to documented commands: a repeated option takes its last
// value (a list too: the sizes are replaced, not added to).
BOOST_AUTO_TEST_CASE(later_options_win) {
  TempDir tmp;
  const fs::path log = tmp.path() / "sgemm.txt";
  BOOST_REQUIRE_MESSAGE(posgrad::test::run_app(bench_path("bench_sgemm"), "--sizes 512,256 --reps 3 --no-torch --sizes 8 --reps 1 --no-torch",
                                               log, "OMP_NUM_THREADS=1 ") == 0,
                        read_text(log));
  const std::string out = read_text(log);
  BOOST_TEST(out.find("1 reps") != std::string::npos, out);
  BOOST_TEST(out.find("n=    8") != std::string::npos, out);
  BOOST_TEST(out.find("n=  512") == std::string::npos, out);
  BOOST_TEST(out.find("n=  256") == std::string::npos, out);
}

BOOST_AUTO_TEST_CASE(bad_device_is_named) {
  TempDir tmp;
  for (const std::string name : {"bench_transformer", "bench_posattn_step", "bench_charlm_step", "bench_attention_paths"}) {
    const fs::path log = tmp.path() / (name + ".device.txt");
    BOOST_TEST(posgrad::test::run_app(bench_path(name), "--device gpu", log) != 0);
    BOOST_TEST(read_text(log).find("unknown device 'gpu': expected cpu, cuda or cuda:N") != std::string::npos,
               name << ":\n" << read_text(log));
  }
}

BOOST_AUTO_TEST_SUITE_END()
