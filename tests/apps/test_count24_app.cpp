// End-to-end test of the count24 app: runs the built executable with a short schedule into a
// temporary run folder and checks what it wrote (summary accuracy, attention on 2s and 4s,
// metrics, checkpoints, figure); that a run killed with SIGKILL and resumed with --resume logs
// exactly the losses of an uninterrupted run; that the run's config.yaml repeats it; that bad
// input gives a clear error and a non-zero exit; --help and the eval job; that a second writer of a
// running run's folder (--overwrite, --resume) is refused naming the first, and a run killed with
// SIGKILL leaves no lock behind; that eval, which takes no lock, scores a run that is being
// written, and refuses a `latest` that leads out of the run; and that empty paths are usage errors.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "apps/common/run_dir.h"
#include "tensor/device.h"
#include "tests/apps/app_process.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::read_text;
using posgrad::test::TempDir;

// The file's helpers and suites in a namespace of their own: in a unity batch (cmake/build_speed.cmake)
// other test files with helpers of the same names (kApp, kTiny, run, ...) come before or after it.
namespace count24_app_tests {
namespace {
const fs::path kApp = fs::path(POSGRAD_BIN_DIR) / "count24";

int run(const std::string& args, const fs::path& log) { return posgrad::test::run_app(kApp, args, log); }

// metrics.jsonl without the wall-clock field: what must repeat exactly.
std::vector<nlohmann::json> metrics_without_time(const fs::path& run_dir) {
  return posgrad::test::metrics_without(run_dir, {"time_s"});
}

int64_t latest_step(const fs::path& run_dir) { return posgrad::test::latest_checkpoint_step(run_dir); }

// A child app process killed with SIGKILL and reaped when the test leaves its scope (a failed
// BOOST_REQUIRE included), unless the test reaped it first (wait_for_end).
struct Child {
  pid_t pid;
  ~Child() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  bool ended(int& status) {  // without waiting
    if (waitpid(pid, &status, WNOHANG) != pid) return false;
    pid = -1;
    return true;
  }
  int kill_and_reap() {
    int status = 0;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    pid = -1;
    return status;
  }
};

const std::string kShort = "-Dtrain.steps=300 -Dtrain.eval_every=100 -Dtrain.log_every=50 "
                           "-Ddata.train_size=20000 -Dtrain.checkpoint_every=100";
}  // namespace

BOOST_AUTO_TEST_SUITE(count24_app)

BOOST_AUTO_TEST_CASE(short_run_reaches_its_accuracy_and_writes_the_run_folder) {
  TempDir tmp;
  const fs::path out = tmp.path() / "run";
  fs::create_directories(tmp.path());
  const int rc = run("--out " + out.string() + " " + kShort, tmp.path() / "log.txt");
  BOOST_REQUIRE_MESSAGE(rc == 0, "count24 failed:\n" << read_text(tmp.path() / "log.txt"));
  const auto summary = nlohmann::json::parse(read_text(out / "summary.json"));
  const double accuracy = summary["test_accuracy"], attention = summary["attention_on_2s_4s"];
  BOOST_TEST_MESSAGE("count24 (300 steps): test_accuracy " << accuracy << ", attention_on_2s_4s " << attention);
  BOOST_TEST(accuracy >= 0.98);
  // Uniform attention would put about 0.26 of the mass on the 2s and 4s; the model must do better.
  BOOST_TEST(attention >= 0.45);
  BOOST_TEST(summary["test_sequences"] == 10000);
  BOOST_TEST(fs::exists(out / "config.yaml"));
  BOOST_TEST(fs::exists(out / "figures" / "count24.png"));
  BOOST_TEST(fs::exists(out / "checkpoints" / "step-000000300" / "model.safetensors"));
  BOOST_TEST(latest_step(out) == 300);
  BOOST_TEST(fs::exists(out / "checkpoints" / "best"));
  BOOST_TEST(summary["best_test_accuracy"].get<double>() >= accuracy);
  std::ifstream metrics(out / "metrics.jsonl");
  int lines = 0;
  for (std::string line; std::getline(metrics, line); ++lines) BOOST_TEST(nlohmann::json::parse(line).contains("loss"));
  BOOST_TEST(lines == 6);
}

BOOST_AUTO_TEST_CASE(bad_input_gives_one_clear_error) {
  TempDir tmp;
  fs::create_directories(tmp.path());
  BOOST_TEST(run("--out " + (tmp.path() / "a").string() + " -Dtrain.no_such_key=1", tmp.path() / "log.txt") != 0);
  BOOST_TEST(read_text(tmp.path() / "log.txt").find("train.no_such_key") != std::string::npos);
  BOOST_TEST(run("--out " + (tmp.path() / "b").string() + " -Dtrain.steps=abc", tmp.path() / "log.txt") != 0);
  BOOST_TEST(read_text(tmp.path() / "log.txt").find("train.steps") != std::string::npos);
  BOOST_TEST(run("--out " + (tmp.path() / "c").string() + " -Dtrain.optimizer=lbfgs", tmp.path() / "log.txt") != 0);
  BOOST_TEST(read_text(tmp.path() / "log.txt").find("one of: adam, adamw, sgd") != std::string::npos);
  BOOST_TEST(run("--out " + (tmp.path() / "d").string() + " -Dtrain.lr=0", tmp.path() / "log.txt") != 0);
  BOOST_TEST(read_text(tmp.path() / "log.txt").find("train.lr") != std::string::npos);
  BOOST_TEST(run("--no-such-option", tmp.path() / "log.txt") == 2);
  BOOST_TEST(run("--resume " + (tmp.path() / "nothing").string(), tmp.path() / "log.txt") == 1);
  BOOST_TEST(read_text(tmp.path() / "log.txt").find("config.yaml") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(help_lists_every_setting_with_type_default_and_help) {
  TempDir tmp;
  BOOST_TEST(run("--help", tmp.path() / "help.txt") == 0);
  const std::string help = read_text(tmp.path() / "help.txt");
  for (const char* part : {"--config", "--resume", "-D", "eval", "train.lr", "float", "0.01", "learning rate",
                           "train.optimizer", "one of: adam, adamw, sgd", "model.hidden", "device"})
    BOOST_TEST(help.find(part) != std::string::npos, part << " missing from:\n" << help);
}

BOOST_AUTO_TEST_CASE(killed_run_resumes_with_identical_losses) {
  TempDir tmp;
  const std::string settings = "-Dtrain.steps=1200 -Dtrain.log_every=20 -Dtrain.eval_every=200 "
                               "-Dtrain.checkpoint_every=100 -Ddata.train_size=20000 -Ddata.test_size=2000";
  const fs::path reference = tmp.path() / "reference", killed = tmp.path() / "killed";
  BOOST_REQUIRE_EQUAL(run("--out " + reference.string() + " " + settings, tmp.path() / "ref.txt"), 0);

  // The same run, killed with SIGKILL once it has written a checkpoint past step 200.
  const pid_t pid = fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    const std::string cmd = "exec " + kApp.string() + " --out " + killed.string() + " " + settings + " > " +
                            (tmp.path() / "killed.txt").string() + " 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  bool exited = false;
  while (latest_step(killed) < 300) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  BOOST_REQUIRE_MESSAGE(!exited, "the run ended before it could be killed:\n" << read_text(tmp.path() / "killed.txt"));
  BOOST_TEST(WIFSIGNALED(status));
  BOOST_TEST(!fs::exists(killed / "summary.json"));
  const int64_t stopped_at = latest_step(killed);
  BOOST_TEST_MESSAGE("killed after the checkpoint of step " << stopped_at);
  BOOST_TEST(stopped_at < 1200);

  BOOST_REQUIRE_MESSAGE(run("--resume " + killed.string(), tmp.path() / "resumed.txt") == 0,
                        read_text(tmp.path() / "resumed.txt"));
  // The done line counts the steps this process ran, though progress updates come every 20 steps.
  const std::string done = fmt::format("train done: {} steps (steps {}-1200)", 1200 - stopped_at, stopped_at + 1);
  BOOST_TEST(read_text(tmp.path() / "resumed.txt").find(done) != std::string::npos, read_text(tmp.path() / "resumed.txt"));
  const auto expected = metrics_without_time(reference), got = metrics_without_time(killed);
  BOOST_REQUIRE_EQUAL(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) BOOST_TEST(got[i] == expected[i], "line " << i + 1 << ": " << got[i].dump() << " vs " << expected[i].dump());
  const auto a = nlohmann::json::parse(read_text(reference / "summary.json"));
  const auto b = nlohmann::json::parse(read_text(killed / "summary.json"));
  for (const char* key : {"test_accuracy", "test_loss", "final_train_loss", "best_test_accuracy", "attention_on_2s_4s"})
    BOOST_TEST(a[key] == b[key], key);
  BOOST_TEST(read_text(killed / "command.txt").find("--resume") != std::string::npos);

  // The run's config.yaml repeats it exactly.
  const fs::path again = tmp.path() / "again";
  BOOST_REQUIRE_EQUAL(run("--config " + (reference / "config.yaml").string() + " --out " + again.string(),
                          tmp.path() / "again.txt"), 0);
  BOOST_TEST(read_text(again / "config.yaml") == read_text(reference / "config.yaml"));
  const auto repeated = metrics_without_time(again);
  BOOST_TEST(repeated == expected);

  // eval scores the best checkpoint: the best test accuracy the run logged.
  BOOST_REQUIRE_EQUAL(run("eval " + reference.string(), tmp.path() / "eval.txt"), 0);
  const std::string eval = read_text(tmp.path() / "eval.txt");
  BOOST_TEST(eval.find(fmt::format("test_accuracy {:.4f}", a["best_test_accuracy"].get<double>())) != std::string::npos, eval);
}

// Issue 23 item 1: a second run with --overwrite on a running run's folder (or a second --resume)
// ran too: config.yaml from one run, checkpoints from the other, metrics.jsonl from both.
BOOST_AUTO_TEST_CASE(a_second_writer_is_refused_while_the_first_runs_and_kill_9_leaves_no_lock) {
  TempDir tmp;
  const fs::path out = tmp.path() / "run";
  const std::string settings = "-Dtrain.steps=1000000 -Dtrain.log_every=100 -Dtrain.eval_every=1000000 "
                               "-Dtrain.checkpoint_every=20 -Ddata.train_size=2000 -Ddata.test_size=200";
  Child first{posgrad::test::start_app(kApp, "--out " + out.string() + " " + settings, tmp.path() / "first.txt")};
  BOOST_REQUIRE(first.pid > 0);
  const pid_t first_pid = first.pid;
  int status = 0;
  while (latest_step(out) < 20) {
    BOOST_REQUIRE_MESSAGE(!first.ended(status), "the first run ended:\n" << read_text(tmp.path() / "first.txt"));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const std::string config = read_text(out / "config.yaml");

  const std::string holder = fmt::format("run folder '{}' is in use by pid {} on host ", out.string(), first_pid);
  BOOST_TEST(run("--out " + out.string() + " --overwrite -Dtrain.steps=30 -Dtrain.lr=0.02", tmp.path() / "second.txt") == 1);
  const std::string second = read_text(tmp.path() / "second.txt");
  BOOST_TEST(second.find(holder) != std::string::npos, second);
  BOOST_TEST(second.find("count24 --out " + out.string()) != std::string::npos, second);  // the holder's command
  BOOST_TEST(std::count(second.begin(), second.end(), '\n') == 1, second);
  BOOST_TEST(run("--resume " + out.string(), tmp.path() / "third.txt") == 1);
  BOOST_TEST(read_text(tmp.path() / "third.txt").find(holder) != std::string::npos, read_text(tmp.path() / "third.txt"));

  // The refused writers changed nothing, and the first run goes on.
  BOOST_TEST(read_text(out / "config.yaml") == config);
  BOOST_TEST(latest_step(out) >= 20);
  BOOST_REQUIRE_MESSAGE(!first.ended(status), "the first run ended:\n" << read_text(tmp.path() / "first.txt"));

  // kill -9 leaves no stale lock: the run resumes at once (it records its command once it holds
  // the folder), and the lock is the resumed run's now.
  BOOST_TEST(WIFSIGNALED(first.kill_and_reap()));
  BOOST_TEST(fs::exists(out / ".lock"));
  Child resumed{posgrad::test::start_app(kApp, "--resume " + out.string(), tmp.path() / "resumed.txt")};
  BOOST_REQUIRE(resumed.pid > 0);
  const pid_t resumed_pid = resumed.pid;
  while (read_text(out / "command.txt").find("--resume") == std::string::npos) {
    BOOST_REQUIRE_MESSAGE(!resumed.ended(status), "the resumed run ended:\n" << read_text(tmp.path() / "resumed.txt"));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  BOOST_TEST(run("--resume " + out.string(), tmp.path() / "fourth.txt") == 1);
  const std::string fourth = read_text(tmp.path() / "fourth.txt");
  BOOST_TEST(fourth.find(fmt::format("is in use by pid {} on host ", resumed_pid)) != std::string::npos, fourth);
  BOOST_TEST(fourth.find("count24 --resume " + out.string()) != std::string::npos, fourth);
}

// Issue 23 items 6 and 10: eval followed a `latest` that leads to another run's checkpoint, and a
// NUL byte in it cut the error line.
BOOST_AUTO_TEST_CASE(eval_refuses_a_latest_that_leads_out_of_the_run) {
  TempDir tmp;
  const std::string tiny = "-Dtrain.steps=20 -Dtrain.log_every=10 -Dtrain.eval_every=20 -Dtrain.checkpoint_every=20 "
                           "-Ddata.train_size=500 -Ddata.test_size=100";
  const fs::path a = tmp.path() / "a", b = tmp.path() / "b";
  BOOST_REQUIRE_EQUAL(run("--out " + a.string() + " " + tiny, tmp.path() / "a.txt"), 0);
  BOOST_REQUIRE_EQUAL(run("--out " + b.string() + " -Dseed=7 " + tiny, tmp.path() / "b.txt"), 0);
  {
    // eval only reads: it takes no lock, so a run that is being written (here: this process holds
    // its lock) can be scored.
    posgrad::apps::RunDir writer(a, posgrad::apps::ExistingRun::Append);
    BOOST_REQUIRE_EQUAL(run("eval " + a.string() + " --checkpoint latest", tmp.path() / "eval.txt"), 0);
  }
  for (const std::string& pointer : std::vector<std::string>{"../../b/checkpoints/step-000000020", (b / "checkpoints" / "step-000000020").string()}) {
    std::ofstream(a / "checkpoints" / "latest") << pointer << "\n";
    BOOST_TEST(run("eval " + a.string() + " --checkpoint latest", tmp.path() / "eval.txt") == 1);
    const std::string log = read_text(tmp.path() / "eval.txt");
    BOOST_TEST(log.find("checkpoint pointer '" + (a / "checkpoints" / "latest").string() + "' is corrupt") != std::string::npos, log);
    BOOST_TEST(log.find(pointer) != std::string::npos, log);
  }
  std::ofstream(a / "checkpoints" / "latest", std::ios::binary) << std::string("step-000000020\0../b\n", 20);
  BOOST_TEST(run("eval " + a.string() + " --checkpoint latest", tmp.path() / "eval.txt") == 1);
  const std::string log = read_text(tmp.path() / "eval.txt");
  BOOST_TEST(log.find("holds \"step-000000020\\x00../b\", not the name of a step folder of this run") != std::string::npos, log);
}

// Issue 23 item 8: `--resume ""` (an unset shell variable) started a fresh run in a new default
// folder, `--out ""` used the default folder; eval "" read the current folder.
BOOST_AUTO_TEST_CASE(empty_paths_are_usage_errors) {
  TempDir tmp;
  // Run in a scratch folder: where a default run folder (runs/count24/...) would appear.
  const std::string in_scratch = "cd " + tmp.path().string() + " && ";
  for (const std::string& args : {"--out '' -Dtrain.steps=2", "--resume ''", "eval ''", "--config '' -Dtrain.steps=2"}) {
    BOOST_TEST(posgrad::test::run_app(kApp, args, tmp.path() / "log.txt", in_scratch) == 2, args);
    const std::string log = read_text(tmp.path() / "log.txt");
    BOOST_TEST(log.find("an empty path is not a folder or a file") != std::string::npos, args << ": " << log);
  }
  BOOST_TEST(!fs::exists(tmp.path() / "runs"));
}

BOOST_AUTO_TEST_CASE(divergence_is_reported_not_hidden) {
  TempDir tmp;
  fs::create_directories(tmp.path());
  const int rc = run("--out " + (tmp.path() / "d").string() + " -Dtrain.optimizer=sgd -Dtrain.lr=1e30 -Dtrain.steps=50",
                     tmp.path() / "log.txt");
  const std::string log = read_text(tmp.path() / "log.txt");
  BOOST_TEST(rc != 0, log);
  BOOST_TEST(log.find("training stopped") != std::string::npos, log);
  BOOST_TEST(log.find("step") != std::string::npos, log);
}

BOOST_AUTO_TEST_CASE(device_is_a_config_key) {
  TempDir tmp;
  fs::create_directories(tmp.path());
  BOOST_TEST(run("--out " + (tmp.path() / "e").string() + " -Ddevice=tpu", tmp.path() / "log.txt") != 0);
  BOOST_TEST(read_text(tmp.path() / "log.txt").find("unknown device 'tpu'") != std::string::npos);
  // cuda: trains on the GPU where there is one; elsewhere one clear line saying why not.
  const int rc = run("--out " + (tmp.path() / "f").string() + " -Ddevice=cuda -Dtrain.steps=200 -Ddata.train_size=20000",
                     tmp.path() / "log.txt");
  const std::string log = read_text(tmp.path() / "log.txt");
  if (posgrad::cuda_available()) {
    BOOST_REQUIRE_MESSAGE(rc == 0, "count24 on cuda failed:\n" << log);
    const auto summary = nlohmann::json::parse(read_text(tmp.path() / "f" / "summary.json"));
    BOOST_TEST(summary["device"] == "cuda:0");
    BOOST_TEST(double(summary["test_accuracy"]) >= 0.98);
  } else {
    BOOST_TEST(rc != 0, log);
    BOOST_TEST((log.find("CUDA cannot be used") != std::string::npos ||
                log.find("built without the CUDA backend") != std::string::npos),
               log);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace count24_app_tests
