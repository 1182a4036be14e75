// Checkpoints written by an older main still load and compute what they computed there: the run
// folders in tests/fixtures/old_main_runs were written by the charlm and posattn binaries of main
// c32e0b3 (before queries and keys had their own positions; see the README there for the
// commands), and the outputs below are what those binaries printed for them. Today's binaries
// read the same folders (a copy) and must print the same: greedy charlm samples (key_pe with
// adaptive span, and transformer_xl) and the posattn evaluation (2-D SIREN with a Gaussian span,
// on MNIST, skipped with the reason when the data is absent).
#include <boost/test/unit_test.hpp>

#include <filesystem>

#include "tests/apps/app_process.h"
#include "tests/data_present.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::read_text;
using posgrad::test::TempDir;

namespace {

const fs::path kFixtures = fs::path(POSGRAD_SOURCE_DIR) / "tests" / "fixtures" / "old_main_runs";

// A writable copy of fixture run `name` in `tmp` (the jobs may write beside the checkpoints).
fs::path copy_run(const TempDir& tmp, const std::string& name) {
  const fs::path run = tmp.path() / name;
  fs::copy(kFixtures / name, run, fs::copy_options::recursive);
  return run;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(old_checkpoints)

BOOST_AUTO_TEST_CASE(charlm_runs_of_the_old_main_sample_the_same_text) {
  TempDir tmp;
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"charlm_key_pe", "the \nza,jn on on on on on on\n"},
      {"charlm_transformer_xl", "the tnvp tnvp tnvp tnvp tnvp\n"},
  };
  for (const auto& [name, expected] : runs) {
    const fs::path run = copy_run(tmp, name), log = tmp.path() / (name + ".txt");
    const std::string args = "sample --checkpoint " + run.string() + " --which latest --prompt 'the ' --tokens 24 --top-k 1 --seed 5";
    BOOST_TEST(posgrad::test::run_app(fs::path(POSGRAD_BIN_DIR) / "charlm", args, log, "OMP_NUM_THREADS=1 ") == 0,
               name << ":\n" << read_text(log));
    BOOST_TEST(read_text(log) == expected, name << ": sampled\n" << read_text(log));
  }
}

BOOST_AUTO_TEST_CASE(posattn_run_of_the_old_main_scores_the_same,
                     *boost::unit_test::precondition(posgrad::test::data_present("mnist"))) {
  TempDir tmp;
  const fs::path run = copy_run(tmp, "posattn_siren_span"), log = tmp.path() / "eval.txt";
  BOOST_TEST(posgrad::test::run_app(fs::path(POSGRAD_BIN_DIR) / "posattn", "eval " + run.string(), log,
                                    "OMP_NUM_THREADS=1 ") == 0,
             read_text(log));
  const std::string scored = "best checkpoint step-000000002 on the val split (12 images): accuracy 0.0833  loss 2.3880";
  BOOST_TEST(read_text(log).find(scored) != std::string::npos, read_text(log));
}

BOOST_AUTO_TEST_SUITE_END()
