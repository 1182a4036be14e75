// The sweep tool (apps/common/sweep*.h, build/bin/posgrad-sweep): Welch's t-test and the 95%
// confidence interval of the mean against known values (Student's t table quantiles, a Welch case
// built to land on one, and the posattn thesis's Table 5 p-value from its summary statistics); a
// partial table (an arm with no finished run has no effect, not nan); sweep files with a clear error for a bad one; and a tiny real sweep (count24, 2 arms
// x 2 seeds, a few steps) that writes its tables and figure, skips every run when re-run, and
// continues a run that lost its summary (an interrupted run) with --resume; duplicate seeds or
// grid values refused; SIGTERM and Ctrl-C (SIGINT to the process group) stopping a sweep and
// its run in progress, and the same command finishing the grid afterwards; that a sweep folder
// or a run folder another process holds is refused, naming it, with nothing written into it; and
// that an empty path is an error, not "the default"; and that every sweep file and preset in
// configs/ names only settings its app has.
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "apps/common/folder_lock.h"
#include "apps/common/run_dir.h"
#include "apps/common/sweep.h"
#include "apps/common/sweep_report.h"
#include "apps/common/sweep_stats.h"
#include "tests/test_support.h"

extern char** environ;

namespace fs = std::filesystem;
using namespace posgrad::apps;
using namespace std::chrono_literals;
using posgrad::test::read_text;
using posgrad::test::TempDir;

namespace {
int run_sweep(const std::string& args, const fs::path& log) {
  const std::string cmd = "OMP_NUM_THREADS=1 " + (fs::path(POSGRAD_BIN_DIR) / "posgrad-sweep").string() + " " + args +
                          " > " + log.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool wait_until(const std::function<bool()>& done, std::chrono::seconds limit) {
  for (const auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

// posgrad-sweep started as a shell starts a job: in a process group of its own (with the runs it
// starts), SIGINT, SIGTERM and SIGHUP at their defaults, one OpenMP thread, output to `log`.
// Whatever of the group is still there at scope exit is killed.
class SweepJob {
 public:
  SweepJob(const std::vector<std::string>& args, const fs::path& log) {
    std::vector<std::string> argv_text{(fs::path(POSGRAD_BIN_DIR) / "posgrad-sweep").string()};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<std::string> env_text{"OMP_NUM_THREADS=1"};
    for (char** e = environ; *e; ++e)
      if (std::string(*e).rfind("OMP_NUM_THREADS=", 0) != 0) env_text.emplace_back(*e);
    std::vector<char*> argv, envp;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t files;
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&files);
    sigset_t defaults, none;
    sigemptyset(&defaults);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&defaults, sig);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
    const int rc = posix_spawn(&pid_, argv[0], &files, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attr);
    BOOST_REQUIRE_MESSAGE(rc == 0, "posix_spawn: " << std::strerror(rc));
  }
  ~SweepJob() {
    ::kill(-pid_, SIGKILL);
    if (!reaped_) ::waitpid(pid_, nullptr, 0);
  }
  SweepJob(const SweepJob&) = delete;
  SweepJob& operator=(const SweepJob&) = delete;

  pid_t pid() const { return pid_; }
  // The wait status once the sweep has ended, or nullopt when it runs on past `limit`.
  std::optional<int> wait(std::chrono::seconds limit) {
    int status = 0;
    const bool ended = wait_until([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, limit);
    reaped_ = ended;
    return ended ? std::optional<int>(status) : std::nullopt;
  }
  // Whether no process of the sweep's group (its runs included) is left, now: a sweep that has
  // ended has waited for its run.
  bool group_is_gone() const { return ::kill(-pid_, 0) != 0 && errno == ESRCH; }

 private:
  pid_t pid_ = 0;
  bool reaped_ = false;
};

std::string describe(const std::optional<int>& status) {
  if (!status) return "still running";
  if (WIFSIGNALED(*status)) return "ended by signal " + std::to_string(WTERMSIG(*status));
  return "exit " + std::to_string(WEXITSTATUS(*status));
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

BOOST_AUTO_TEST_CASE(a_comparison_with_an_arm_not_yet_run_has_no_effect) {
  // A sweep stopped early: arm "done" has two finished seeds, arm "waiting" none, arm "one" a
  // single seed. The effect needs a mean of each arm and Welch's test two values of each.
  TempDir tmp;
  SweepSpec spec;
  spec.title = "partial";
  spec.metric = "test_accuracy";
  spec.out = tmp.path() / "out";
  spec.arms = {SweepArm{"done", {}, {}, std::nullopt}, SweepArm{"waiting", {}, {}, std::nullopt},
               SweepArm{"one", {}, {}, std::nullopt}};
  spec.comparisons = {SweepComparison{"waiting vs done", "done", "waiting", 0.01, 0.5},
                      SweepComparison{"one vs done", "done", "one", std::nullopt, std::nullopt}};
  std::vector<RunResult> results;
  for (double v : {0.5, 0.7}) results.push_back({SweepRun{0, 0, tmp.path()}, "finished", v, {}, {}});
  results.push_back({SweepRun{1, 0, tmp.path()}, "not started", std::nullopt, {}, {}});
  results.push_back({SweepRun{2, 0, tmp.path()}, "finished", 0.65, {}, {}});
  write_sweep_report(spec, results, "");
  const std::string md = read_text(spec.out / "results.md");
  BOOST_TEST(md.find("nan") == std::string::npos, md);
  BOOST_TEST(md.find("| waiting vs done | done | waiting | - | - | - | - |\n") != std::string::npos, md);
  BOOST_TEST(md.find("| one vs done | done | one | +0.0500 | - | - | - |\n") != std::string::npos, md);
  const std::string csv = read_text(spec.out / "results.csv");
  BOOST_TEST(csv.find("waiting vs done,done,waiting,,,,,0.01,0.5") != std::string::npos, csv);
  BOOST_TEST(csv.find("one vs done,done,one,0.05") != std::string::npos, csv);
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
  // The learning curves: x, y and a log scale for y; nothing else.
  std::ofstream(f) << "app: count24\nseeds: [1]\ncurve: {x: epoch, y: dev_ppl, log_y: true}\n";
  BOOST_TEST(load_sweep(f).curve_log_y);
  BOOST_TEST(load_sweep(f).curve_y == "dev_ppl");
  std::ofstream(f) << "app: count24\nseeds: [1]\ncurve: {y: loss}\n";
  BOOST_TEST(!load_sweep(f).curve_log_y);
  std::ofstream(f) << "app: count24\nseeds: [1]\ncurve: {y: loss, logy: true}\n";
  BOOST_CHECK_EXCEPTION(load_sweep(f), posgrad::Error, [](const posgrad::Error& e) {
    return std::string(e.what()).find("curve: unknown key 'logy' (x, y, log_y)") != std::string::npos;
  });
  // ranks and launcher: the command before the app's; not both, and at least one rank.
  std::ofstream(f) << "app: count24\nseeds: [1]\nranks: 0\n";
  BOOST_CHECK_EXCEPTION(load_sweep(f), posgrad::Error, [](const posgrad::Error& e) {
    return std::string(e.what()).find("ranks: the number of ranks must be at least 1, got 0") != std::string::npos;
  });
  std::ofstream(f) << "app: count24\nseeds: [1]\nranks: 2\nlauncher: [srun]\n";
  BOOST_CHECK_EXCEPTION(load_sweep(f), posgrad::Error, [](const posgrad::Error& e) {
    return std::string(e.what()).find("give 'ranks' or 'launcher', not both") != std::string::npos;
  });
  std::ofstream(f) << "app: count24\nseeds: [1]\nlauncher: [srun, -n, 4]\n";
  const SweepSpec launched = load_sweep(f);
  const auto command = run_command(launched, plan_sweep(launched)[0], "/bin/count24", {}, /*resume=*/true);
  BOOST_TEST(command == (std::vector<std::string>{"srun", "-n", "4", "/bin/count24", "train", "--resume",
                                                  plan_sweep(launched)[0].dir.string()}),
             boost::test_tools::per_element());
  std::ofstream(f) << "app: count24\nseeds: [1]\nranks: 3\n";
  BOOST_TEST(load_sweep(f).launcher == (std::vector<std::string>{"mpirun", "-np", "3"}), boost::test_tools::per_element());
  // A grid expands every arm.
  std::ofstream(f) << "app: count24\nseeds: [1, 2]\narms:\n  - name: a\n  - name: b\ngrid: {train.lr: [0.1, 0.01]}\n";
  const SweepSpec spec = load_sweep(f);
  BOOST_TEST(spec.arms.size() == 4u);
  BOOST_TEST(spec.arms[1].name == "a,train.lr=0.01");
  BOOST_TEST(plan_sweep(spec).size() == 8u);
}

// `over`: summary numbers against a grid setting (the adaptive-span paper's Figure 3: bits per
// character and average span against S for a fixed and an adaptive span): each arm's family and
// x from the grid, a table per number (mean ± sd (n) per family and value, "-" for no finished
// run), over.csv, the figure; and a bad `over` named.
BOOST_AUTO_TEST_CASE(over_tables_a_summary_number_against_a_grid_setting) {
  TempDir tmp;
  fs::create_directories(tmp.path());
  const fs::path f = tmp.path() / "fig3.yaml";
  std::ofstream(f) << "app: charlm\nseeds: [1, 2]\nmetric: val_bpc\nhigher_is_better: false\n"
                      "arms:\n  - {name: fixed, set: {model.span: none}}\n  - {name: adaptive}\n"
                      "grid: {model.max_span: [64, 256, 1024]}\n"
                      "over: {setting: model.max_span, y: [val_bpc, span_avg], log_x: true}\n";
  SweepSpec spec = load_sweep(f);
  spec.out = tmp.path() / "out";
  BOOST_REQUIRE(spec.arms.size() == 6u);
  BOOST_TEST(spec.over_setting == "model.max_span");
  BOOST_TEST(spec.over_log_x);
  BOOST_TEST(spec.arms[2].name == "fixed,model.max_span=1024");
  BOOST_TEST(spec.arms[2].family == "fixed");
  BOOST_TEST(spec.arms[2].over_x == 1024.0);
  BOOST_TEST(spec.arms[3].family == "adaptive");
  BOOST_TEST(spec.arms[3].over_x == 64.0);
  // fixed: both seeds at S = 64 and 256, none at 1024; adaptive: one seed at 64.
  std::vector<RunResult> results;
  const auto finished = [&](size_t arm, double bpc, double span) {
    results.push_back({SweepRun{arm, 0, tmp.path()}, "finished", bpc, {}, {}, {{"val_bpc", bpc}, {"span_avg", span}}});
  };
  finished(0, 2.4, 64), finished(0, 2.6, 64), finished(1, 2.2, 256), finished(1, 2.3, 256), finished(3, 2.5, 33);
  results.push_back({SweepRun{2, 0, tmp.path()}, "not started", std::nullopt, {}, {}, {}});
  write_sweep_report(spec, results, "");
  const std::string md = read_text(spec.out / "results.md");
  BOOST_TEST(md.find("`val_bpc` against `model.max_span`") != std::string::npos, md);
  BOOST_TEST(md.find("| arm | model.max_span = 64 | model.max_span = 256 | model.max_span = 1024 |") != std::string::npos, md);
  // sd of {2.4, 2.6} = 0.1414; of {2.2, 2.3} = 0.07071.
  BOOST_TEST(md.find("| fixed | 2.5 ± 0.14 (2) | 2.25 ± 0.071 (2) | - |") != std::string::npos, md);
  BOOST_TEST(md.find("| adaptive | 2.5 (1) | - | - |") != std::string::npos, md);
  BOOST_TEST(md.find("| fixed | 64 ± 0 (2) | 256 ± 0 (2) | - |") != std::string::npos, md);
  const std::string csv = read_text(spec.out / "over.csv");
  BOOST_TEST(csv.find("family,model.max_span,number,n,mean,sd,values\n") == 0u, csv);
  BOOST_TEST(csv.find("fixed,256,val_bpc,2,2.25,") != std::string::npos, csv);
  BOOST_TEST(csv.find("adaptive,64,span_avg,1,33,,33\n") != std::string::npos, csv);
  BOOST_TEST(fs::file_size(spec.out / "figures" / "over.png") > 1000u);

  const auto refused_with = [&](const std::string& over, const std::string& expected) {
    std::ofstream(f) << "app: charlm\nseeds: [1]\ngrid: {model.max_span: [64, 128], model.span: [none, x]}\n" << over;
    try {
      load_sweep(f);
      BOOST_ERROR("accepted " << over);
    } catch (const posgrad::Error& e) {
      BOOST_TEST(std::string(e.what()).find(expected) != std::string::npos, e.what());
    }
  };
  refused_with("over: {setting: train.lr, y: [val_bpc]}\n", "over.setting 'train.lr' is not a key of 'grid'");
  refused_with("over: {setting: model.span, y: [val_bpc]}\n", "grid.model.span value 'none' is not a number");
  refused_with("over: {setting: model.max_span}\n", "over: 'y' must list summary.json numbers");
  refused_with("over: {setting: model.max_span, y: [a], logx: true}\n", "over: unknown key 'logx' (setting, y, log_x)");
  std::ofstream(f) << "app: charlm\nseeds: [1]\ngrid: {model.max_span: [0, 128]}\nover: {setting: model.max_span, y: [a], log_x: true}\n";
  BOOST_CHECK_EXCEPTION(load_sweep(f), posgrad::Error, [](const posgrad::Error& e) {
    return std::string(e.what()).find("value '0' cannot go on a log x axis") != std::string::npos;
  });
  // With two grid settings, the family keeps the other one.
  std::ofstream(f) << "app: charlm\nseeds: [1]\ngrid: {model.max_span: [64, 128], model.span: [none, adaptive_span]}\n"
                      "over: {setting: model.max_span, y: [val_bpc]}\n";
  const SweepSpec two = load_sweep(f);
  BOOST_TEST(two.arms[1].name == "model.max_span=64,model.span=adaptive_span");
  BOOST_TEST(two.arms[1].family == "model.span=adaptive_span");
  BOOST_TEST(two.arms[2].family == "model.span=none");
  BOOST_TEST(two.arms[2].over_x == 128.0);
}

// A seed or an arm listed twice would count one run twice (n = 2, sd 0) and inflate the Welch
// test's sample size: each is an error naming the duplicate.
BOOST_AUTO_TEST_CASE(duplicate_seeds_and_arms_are_refused) {
  TempDir tmp;
  const fs::path f = tmp.path() / "dup.yaml";
  const auto refused_with = [&](const std::string& yaml, const std::string& expected) {
    std::ofstream(f) << yaml;
    try {
      load_sweep(f);
    } catch (const posgrad::Error& e) {
      const std::string what = e.what();
      BOOST_TEST(what.find(expected) != std::string::npos, what);
      BOOST_TEST(what.find('\n') == std::string::npos, what);
      return;
    }
    BOOST_ERROR("accepted a sweep file with a duplicate: " << yaml);
  };
  refused_with("app: count24\nseeds: [1, 1]\n", "seed 1 is listed twice");
  refused_with("app: count24\nseeds: [7, 3, 007]\n", "seed 7 is listed twice");
  refused_with("app: count24\nseeds: [1]\narms:\n  - name: a\n  - name: a\n", "two arms are named 'a'");
  refused_with("app: count24\nseeds: [1]\ngrid: {train.lr: [0.1, 0.01, 0.1]}\n", "grid.train.lr lists '0.1' twice");
}

// The settings an app takes: the first word of each line of its --help's settings list.
std::set<std::string> read_app_settings(const std::string& app, const fs::path& scratch) {
  const fs::path help = scratch / (app + "_help.txt");
  const std::string cmd = (fs::path(POSGRAD_BIN_DIR) / app).string() + " --help > " + help.string() + " 2>&1";
  BOOST_REQUIRE_EQUAL(std::system(cmd.c_str()), 0);
  std::istringstream text(read_text(help));
  std::set<std::string> keys;
  bool listing = false;
  for (std::string line; std::getline(text, line);) {
    if (line.rfind("Settings", 0) == 0) listing = true;
    else if (listing && line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ')
      keys.insert(line.substr(2, line.find(' ', 2) - 2));
  }
  BOOST_REQUIRE_MESSAGE(keys.count("seed"), app << " --help lists no settings");
  return keys;
}

// Each app's settings, read from its --help once.
class AppSettings {
 public:
  const std::set<std::string>& of(const std::string& app) {
    auto it = known_.find(app);
    if (it == known_.end()) it = known_.emplace(app, read_app_settings(app, scratch_.path())).first;
    return it->second;
  }

 private:
  TempDir scratch_;
  std::map<std::string, std::set<std::string>> known_;
};

// Every sweep file the project ships (configs/<app>/sweeps/) loads: its keys, arms, comparisons
// and presets (found in the source tree), an app this build has, at least one run, and only
// settings that app has in its overrides (the sweep's, each arm's and the grid's) and seeds.
BOOST_AUTO_TEST_CASE(every_shipped_sweep_file_loads) {
  AppSettings settings;
  int files = 0;
  for (const auto& app_dir : fs::directory_iterator(fs::path(POSGRAD_SOURCE_DIR) / "configs")) {
    if (!fs::is_directory(app_dir.path() / "sweeps")) continue;
    for (const auto& entry : fs::directory_iterator(app_dir.path() / "sweeps")) {
      if (entry.path().extension() != ".yaml") continue;
      BOOST_TEST_CONTEXT(entry.path().string()) {
        ++files;
        const SweepSpec spec = load_sweep(entry.path());
        BOOST_REQUIRE_MESSAGE(fs::exists(fs::path(POSGRAD_BIN_DIR) / spec.app), spec.app);
        BOOST_TEST(!plan_sweep(spec).empty());
        const std::set<std::string>& known = settings.of(spec.app);
        BOOST_TEST(known.count(spec.seed_key), spec.seed_key);
        for (const auto& [key, value] : spec.set) BOOST_TEST(known.count(key), "set: " << key);
        for (const SweepArm& arm : spec.arms)
          for (const auto& [key, value] : arm.set) BOOST_TEST(known.count(key), arm.name << ": " << key);
      }
    }
  }
  BOOST_TEST(files >= 25);
}

// The dotted keys of a settings file: nested maps flattened (model: {width: 64} is model.width), a
// map that is itself a setting's value kept whole.
void preset_keys(const YAML::Node& node, const std::string& prefix, const std::set<std::string>& known,
                 std::vector<std::string>& keys) {
  if (!node.IsMap() || known.count(prefix)) return keys.push_back(prefix);
  for (const auto& entry : node)
    preset_keys(entry.second, prefix.empty() ? entry.first.as<std::string>() : prefix + "." + entry.first.as<std::string>(),
                known, keys);
}

// Every preset the project ships (configs/<app>/ and the folders below it but sweeps/, and
// configs/count24_seed.yaml) names only settings its app has: a misspelt key fails when the preset
// is used, and most presets (the GPU sizes) are used by no test.
BOOST_AUTO_TEST_CASE(every_shipped_preset_names_only_its_apps_settings) {
  const fs::path configs = fs::path(POSGRAD_SOURCE_DIR) / "configs";
  std::vector<std::pair<std::string, fs::path>> presets{{"count24", configs / "count24_seed.yaml"}};
  for (const auto& app_dir : fs::directory_iterator(configs)) {
    if (!app_dir.is_directory()) continue;
    for (const auto& entry : fs::recursive_directory_iterator(app_dir.path()))
      if (entry.path().extension() == ".yaml" && entry.path().parent_path().filename() != "sweeps")
        presets.emplace_back(app_dir.path().filename().string(), entry.path());
  }
  AppSettings settings;
  for (const auto& [app, preset] : presets) {
    BOOST_TEST_CONTEXT(preset.string()) {
      const std::set<std::string>& known = settings.of(app);
      std::vector<std::string> keys;
      preset_keys(YAML::LoadFile(preset.string()), "", known, keys);
      for (const std::string& key : keys) BOOST_TEST(known.count(key), key);
    }
  }
  BOOST_TEST(presets.size() >= 50u);
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

// SIGTERM (to the sweep alone) and Ctrl-C (SIGINT to the sweep's process group, as a terminal
// sends it) each stop the run in progress and the sweep, leaving no process behind; the same
// command then keeps the finished runs, resumes the interrupted one and runs the rest.
BOOST_AUTO_TEST_CASE(interrupted_sweep_stops_its_run_and_a_rerun_finishes_the_grid) {
  TempDir tmp;
  const fs::path file = tmp.path() / "interrupt.yaml", out = tmp.path() / "out";
  // 1000 steps with a checkpoint every 20: a run is interrupted well before its end.
  std::ofstream(file) << "app: count24\n"
                         "set: {train.steps: 1000, train.log_every: 20, train.eval_every: 500, train.checkpoint_every: 20, "
                         "data.train_size: 2000, data.test_size: 500}\n"
                         "metric: test_accuracy\n"
                         "seeds: [1, 2, 3]\n";
  const std::vector<std::string> args{file.string(), "--out", out.string()};
  const fs::path seed1 = out / "base" / "seed-1", seed2 = out / "base" / "seed-2", seed3 = out / "base" / "seed-3";
  const auto has_checkpoint = [](const fs::path& run) { return fs::exists(run / "checkpoints" / "latest"); };

  {  // SIGTERM to the sweep alone while seed 2 trains: its run must not be left behind.
    const fs::path log = tmp.path() / "sigterm.txt";
    SweepJob sweep(args, log);
    BOOST_REQUIRE_MESSAGE(wait_until([&] { return fs::exists(seed1 / "summary.json") && has_checkpoint(seed2); }, 300s),
                          read_text(log));
    BOOST_REQUIRE(::kill(sweep.pid(), SIGTERM) == 0);
    const auto status = sweep.wait(60s);
    BOOST_TEST((status && WIFSIGNALED(*status) && WTERMSIG(*status) == SIGTERM), describe(status) << "\n" << read_text(log));
    BOOST_TEST(sweep.group_is_gone(), "the run in progress outlived the sweep");
    BOOST_TEST(read_text(log).find("stopped by SIGTERM at [2/3] base seed 2") != std::string::npos, read_text(log));
    BOOST_TEST(!fs::exists(seed2 / "summary.json"));
    BOOST_TEST(!fs::exists(seed3), "the sweep went on to seed 3");
  }
  const auto seed1_stamp = fs::last_write_time(seed1 / "summary.json");
  {  // Ctrl-C while seed 3 trains.
    const fs::path log = tmp.path() / "ctrl_c.txt";
    SweepJob sweep(args, log);
    BOOST_REQUIRE_MESSAGE(wait_until([&] { return fs::exists(seed2 / "summary.json") && has_checkpoint(seed3); }, 300s),
                          read_text(log));
    BOOST_REQUIRE(::kill(-sweep.pid(), SIGINT) == 0);
    const auto status = sweep.wait(60s);
    BOOST_TEST((status && WIFSIGNALED(*status) && WTERMSIG(*status) == SIGINT), describe(status) << "\n" << read_text(log));
    BOOST_TEST(sweep.group_is_gone(), "a process of the sweep outlived it");
    BOOST_TEST(read_text(log).find("base seed 2: resuming") != std::string::npos, read_text(log));
    BOOST_TEST(read_text(log).find("stopped by SIGINT at [3/3] base seed 3") != std::string::npos, read_text(log));
    BOOST_TEST(!fs::exists(seed3 / "summary.json"));
  }
  // The same command finishes the grid: seed 3 resumes, the finished runs are not retrained.
  BOOST_REQUIRE_MESSAGE(run_sweep(file.string() + " --out " + out.string(), tmp.path() / "rerun.txt") == 0,
                        read_text(tmp.path() / "rerun.txt"));
  const std::string rerun = read_text(tmp.path() / "rerun.txt");
  BOOST_TEST(rerun.find("base seed 1: finished, skipped") != std::string::npos, rerun);
  BOOST_TEST(rerun.find("base seed 2: finished, skipped") != std::string::npos, rerun);
  BOOST_TEST(rerun.find("base seed 3: resuming") != std::string::npos, rerun);
  for (const fs::path& run : {seed1, seed2, seed3}) BOOST_TEST(fs::exists(run / "summary.json"), run);
  BOOST_TEST((fs::last_write_time(seed1 / "summary.json") == seed1_stamp));
  BOOST_TEST(read_text(out / "results.md").find("| base | 3 |") != std::string::npos, read_text(out / "results.md"));
}

// Issue 23 item 1 for the sweep: a sweep re-run while another sweep (or an orphan run of an earlier
// one) still wrote the same folder ran into it, both writing one log.
BOOST_AUTO_TEST_CASE(a_sweep_or_run_folder_in_use_is_refused_naming_the_holder) {
  TempDir tmp;
  const fs::path file = tmp.path() / "tiny.yaml", out = tmp.path() / "out", log = tmp.path() / "log.txt";
  std::ofstream(file) << "app: count24\n"
                         "set: {train.steps: 20, train.log_every: 10, train.eval_every: 20, train.checkpoint_every: 20, "
                         "data.train_size: 500, data.test_size: 100}\n"
                         "metric: test_accuracy\n"
                         "seeds: [1]\n"
                         "arms:\n"
                         "  - {name: a}\n";
  const std::string args = file.string() + " --out " + out.string();
  const std::string holder = fmt::format("is in use by pid {} on host ", ::getpid());
  fs::create_directories(out);
  {
    FolderLock other_sweep(out, "sweep folder");
    BOOST_TEST(run_sweep(args, log) == 1);
    const std::string text = read_text(log);
    BOOST_TEST(text.find("posgrad-sweep: error: sweep folder '" + out.string() + "' " + holder) != std::string::npos, text);
    BOOST_TEST(!fs::exists(out / "a"));  // nothing ran
    BOOST_TEST(run_sweep(args + " --dry-run", log) == 0);  // only reads
  }
  const fs::path seed = out / "a" / "seed-1";
  {
    RunDir orphan(seed);  // an earlier sweep's run, still writing
    BOOST_TEST(run_sweep(args, log) == 1);
    const std::string text = read_text(out / "a" / "seed-1.log");
    BOOST_TEST(text.find("count24: error: run folder '" + seed.string() + "' " + holder) != std::string::npos, text);
    BOOST_TEST(!fs::exists(seed / "config.yaml"));
    BOOST_TEST(!fs::exists(seed / "summary.json"));
  }
  BOOST_TEST(run_sweep(args, log) == 0, read_text(log));  // once free, the run goes ahead
  BOOST_TEST(fs::exists(seed / "summary.json"));
}

// Issue 23 item 8 for the sweep: `--out ""` silently used the file's own folder.
BOOST_AUTO_TEST_CASE(empty_paths_are_errors) {
  TempDir tmp;
  const fs::path file = tmp.path() / "tiny.yaml", default_out = tmp.path() / "default", log = tmp.path() / "log.txt";
  std::ofstream(file) << "app: count24\n"
                         "out: " << default_out.string() << "\n"
                         "set: {train.steps: 2, data.train_size: 100, data.test_size: 50}\n"
                         "metric: test_accuracy\n"
                         "seeds: [1]\n"
                         "arms:\n"
                         "  - {name: a}\n";
  for (const std::string& args : {file.string() + " --out ''", std::string("'' --out ") + (tmp.path() / "x").string()}) {
    BOOST_TEST(run_sweep(args, log) != 0, args);
    const std::string text = read_text(log);
    BOOST_TEST(text.find("an empty path is not a folder or a file") != std::string::npos, args << ": " << text);
  }
  BOOST_TEST(!fs::exists(default_out));
  BOOST_TEST(!fs::exists(tmp.path() / "x"));
}

BOOST_AUTO_TEST_SUITE_END()
