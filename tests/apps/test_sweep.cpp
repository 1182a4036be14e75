// The sweep tool (apps/common/sweep*.h, build/bin/posgrad-sweep): Welch's t-test and the 95%
// confidence interval of the mean against known values (Student's t table quantiles, a Welch case
// built to land on one, and the posattn thesis's Table 5 p-value from its summary statistics); sweep files with a clear error for a bad one; and a tiny real sweep (count24, 2 arms
// x 2 seeds, a few steps) that writes its tables and figure, skips every run when re-run, and
// continues a run that lost its summary (an interrupted run) with --resume.
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "apps/common/sweep.h"
#include "apps/common/sweep_report.h"
#include "apps/common/sweep_stats.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace posgrad::apps;
using posgrad::test::read_text;
using posgrad::test::TempDir;

namespace {
int run_sweep(const std::string& args, const fs::path& log) {
  const std::string cmd = "OMP_NUM_THREADS=1 " + (fs::path(POSGRAD_BIN_DIR) / "posgrad-sweep").string() + " " + args +
                          " > " + log.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(sweep)

BOOST_AUTO_TEST_CASE(statistics_match_known_values) {
  // Two-sided Student's t: t(0.975, 10) = 2.228139, t(0.975, 4) = 2.776445, t(0.995, 3) = 5.840909.
  BOOST_TEST(student_t_two_sided_p(2.228139, 10) == 0.05, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(student_t_two_sided_p(2.776445, 4) == 0.05, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(student_t_two_sided_p(-5.840909, 3) == 0.01, boost::test_tools::tolerance(1e-5));
  BOOST_TEST(student_t_two_sided_p(0.0, 7) == 1.0, boost::test_tools::tolerance(1e-12));
  const ArmStats s = arm_stats({1, 2, 3, 4});
  BOOST_TEST(s.mean == 2.5);
  BOOST_TEST(s.max == 4);
  BOOST_TEST(s.sd == std::sqrt(5.0 / 3.0), boost::test_tools::tolerance(1e-12));
  // Thesis Table 5: baseline 0.7493 +- 0.01065 vs SIREN 0.7269 +- 0.02311, n = 5 each: p = 0.0995
  // (from the rounded table values, so to about 3 digits).
  const auto w = welch_t_test(ArmStats{5, 0.7624, 0.7493, 0.01065}, ArmStats{5, 0.7562, 0.7269, 0.02311});
  BOOST_REQUIRE(w.has_value());
  BOOST_TEST(w->effect == -0.0224, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(std::abs(w->p - 0.0995) < 0.002, "p " << w->p);
  // Table 7, 2-D: 0.8026 +- 0.01579 vs 0.8095 +- 0.003782, effect +0.00694 (the means are rounded
  // more than the effect, so b's mean is a's plus the effect): p = 0.3882.
  const auto w2 = welch_t_test(ArmStats{5, 0.8130, 0.8026, 0.01579}, ArmStats{5, 0.8130, 0.8026 + 0.00694, 0.003782});
  BOOST_TEST(std::abs(w2->p - 0.3882) < 0.002, "p " << w2->p);
  BOOST_TEST(!welch_t_test(std::vector<double>{1.0}, std::vector<double>{1.0, 2.0}).has_value());
}

BOOST_AUTO_TEST_CASE(confidence_interval_and_welch_match_t_tables) {
  // Student's t table: t(0.975, 2) = 4.302653, t(0.975, 4) = 2.776445.
  BOOST_TEST(student_t_quantile(0.975, 2) == 4.302653, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(student_t_quantile(0.975, 4) == 2.776445, boost::test_tools::tolerance(1e-6));
  // {1, 2, 3}: sd 1, half width 4.302653 / sqrt(3) = 2.484138.
  BOOST_TEST(ci95_half_width(arm_stats({1, 2, 3})) == 2.484138, boost::test_tools::tolerance(1e-6));
  // {1, ..., 5}: sd sqrt(2.5), half width 2.776445 * sqrt(2.5) / sqrt(5) = 2.776445 / sqrt(2) = 1.963243.
  BOOST_TEST(ci95_half_width(arm_stats({1, 2, 3, 4, 5})) == 1.963243, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(std::isnan(ci95_half_width(arm_stats({1.0}))));
  // Two arms of 3 with sd 1 each: the Welch df is (2/3)^2 / (2 (1/3)^2 / 2) = 4 and the standard
  // error sqrt(2/3); a shift of 2.776445 sqrt(2/3) gives t = t(0.975, 4), so p = 0.05 exactly.
  const double shift = 2.776445 * std::sqrt(2.0 / 3.0);
  const auto w = welch_t_test(std::vector<double>{0, 1, 2}, std::vector<double>{shift, shift + 1, shift + 2});
  BOOST_REQUIRE(w.has_value());
  BOOST_TEST(w->df == 4.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(w->t == 2.776445, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(w->p == 0.05, boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(results_table_gives_the_mean_with_its_confidence_interval) {
  TempDir tmp;
  SweepSpec spec;
  spec.title = "ci";
  spec.metric = "test_accuracy";
  spec.out = tmp.path() / "out";
  spec.arms = {SweepArm{"three", {}, {}, std::nullopt}, SweepArm{"one", {}, {}, std::nullopt}};
  std::vector<RunResult> results;
  for (double v : {1.0, 2.0, 3.0}) results.push_back({SweepRun{0, 0, tmp.path()}, "finished", v, {}, {}});
  results.push_back({SweepRun{1, 0, tmp.path()}, "finished", 0.5, {}, {}});
  write_sweep_report(spec, results, "");
  const std::string md = read_text(spec.out / "results.md");
  BOOST_TEST(md.find("| mean ± 95% CI |") != std::string::npos, md);
  // mean 2, sd 1, half width 4.302653 / sqrt(3) = 2.484138; a single value has no interval.
  BOOST_TEST(md.find("| 2.0000 | 1.0000 | 2.0000 ± 2.4841 |") != std::string::npos, md);
  BOOST_TEST(md.find("| 0.5000 | - | - |") != std::string::npos, md);
  const std::string csv = read_text(spec.out / "results.csv");
  BOOST_TEST(csv.find("arm,n,values,max,mean,sd,ci95_low,ci95_high,") == 0u, csv);
  BOOST_TEST(csv.find("three,3,1;2;3,3,2,1,-0.48413") != std::string::npos, csv);
  BOOST_TEST(csv.find(",4.48413") != std::string::npos, csv);
}

BOOST_AUTO_TEST_CASE(bad_sweep_files_are_named) {
  TempDir tmp;
  fs::create_directories(tmp.path());
  const fs::path f = tmp.path() / "bad.yaml";
  std::ofstream(f) << "app: count24\nseeds: [1]\narms:\n  - name: a\ncomparisons:\n  - {a: a, b: nope}\n";
  BOOST_CHECK_EXCEPTION(load_sweep(f), posgrad::Error, [](const posgrad::Error& e) {
    return std::string(e.what()).find("no arm named 'nope'") != std::string::npos;
  });
  std::ofstream(f) << "app: count24\nseeds: [1]\narms: []\nmetrik: x\n";
  BOOST_CHECK_EXCEPTION(load_sweep(f), posgrad::Error, [](const posgrad::Error& e) {
    return std::string(e.what()).find("unknown key 'metrik'") != std::string::npos;
  });
  // A grid expands every arm.
  std::ofstream(f) << "app: count24\nseeds: [1, 2]\narms:\n  - name: a\n  - name: b\ngrid: {train.lr: [0.1, 0.01]}\n";
  const SweepSpec spec = load_sweep(f);
  BOOST_TEST(spec.arms.size() == 4u);
  BOOST_TEST(spec.arms[1].name == "a,train.lr=0.01");
  BOOST_TEST(plan_sweep(spec).size() == 8u);
}

BOOST_AUTO_TEST_CASE(tiny_sweep_writes_its_table_and_skips_finished_runs) {
  TempDir tmp;
  fs::create_directories(tmp.path());
  const fs::path file = tmp.path() / "tiny.yaml", out = tmp.path() / "out";
  std::ofstream(file) << "app: count24\n"
                         "set: {train.steps: 40, train.log_every: 10, train.eval_every: 20, train.checkpoint_every: 20, "
                         "data.train_size: 2000, data.test_size: 500}\n"
                         "metric: test_accuracy\n"
                         "curve: {x: step, y: loss}\n"
                         "seeds: [1, 2]\n"
                         "arms:\n"
                         "  - {name: fast, set: {train.lr: 0.05}, reference: {max: 1.0, mean: 0.99, sd: 0.01}}\n"
                         "  - {name: slow, set: {train.lr: 0.00001}}\n"
                         "comparisons:\n"
                         "  - {name: fast vs slow, a: slow, b: fast, reference_effect: 0.4}\n";
  BOOST_REQUIRE_MESSAGE(run_sweep(file.string() + " --out " + out.string(), tmp.path() / "log1.txt") == 0,
                        read_text(tmp.path() / "log1.txt"));
  for (const char* arm : {"fast", "slow"})
    for (const char* seed : {"seed-1", "seed-2"}) BOOST_TEST(fs::exists(out / arm / seed / "summary.json"), arm << seed);
  const std::string md = read_text(out / "results.md");
  BOOST_TEST(md.find("| fast | 2 |") != std::string::npos, md);
  BOOST_TEST(md.find("| slow | 2 |") != std::string::npos, md);
  BOOST_TEST(md.find("| fast vs slow | slow | fast |") != std::string::npos, md);
  BOOST_TEST(md.find("1.0000 | 0.9900 | 0.0100 |") != std::string::npos, md);  // the reference beside ours
  const std::string csv = read_text(out / "results.csv");
  BOOST_TEST(csv.find("arm,n,values,max,mean,sd") == 0u, csv);
  BOOST_TEST(read_text(out / "runs.csv").find("fast,2,finished,") != std::string::npos);
  BOOST_TEST(fs::exists(out / "figures" / "curves.png"));
  BOOST_TEST(fs::exists(out / "figures" / "curves.svg"));

  // Re-run: every run is skipped, nothing is retrained.
  const auto stamp = fs::last_write_time(out / "fast" / "seed-1" / "summary.json");
  BOOST_REQUIRE_EQUAL(run_sweep(file.string() + " --out " + out.string(), tmp.path() / "log2.txt"), 0);
  const std::string log2 = read_text(tmp.path() / "log2.txt");
  size_t skipped = 0;
  for (size_t at = log2.find("finished, skipped"); at != std::string::npos; at = log2.find("finished, skipped", at + 1)) ++skipped;
  BOOST_TEST(skipped == 4u, log2);
  BOOST_TEST((fs::last_write_time(out / "fast" / "seed-1" / "summary.json") == stamp));

  // A run without its summary (interrupted) is continued with --resume, the others are skipped.
  fs::remove(out / "slow" / "seed-2" / "summary.json");
  BOOST_REQUIRE_EQUAL(run_sweep(file.string() + " --out " + out.string(), tmp.path() / "log3.txt"), 0);
  const std::string log3 = read_text(tmp.path() / "log3.txt");
  BOOST_TEST(log3.find("slow seed 2: resuming") != std::string::npos, log3);
  BOOST_TEST(fs::exists(out / "slow" / "seed-2" / "summary.json"));
  BOOST_TEST(read_text(out / "slow" / "seed-2" / "command.txt").find("--resume") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
