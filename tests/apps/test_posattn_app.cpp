// End-to-end tests of the posattn app on real CIFAR-10 (a few hundred images average-pooled to
// 8x8, a one-block model, a few epochs): the built executable writes the protocol's metrics per
// epoch and its checkpoints; a run killed with SIGKILL and resumed with --resume logs exactly
// what an uninterrupted run logs; eval scores the best checkpoint at the accuracy the run logged;
// a NaN injected into a parameter stops the run naming the parameter and keeps the checkpoint;
// bad input (no data folder, an image size that does not fit, an unknown scheme) gets a clear
// error; every quick preset trains a few steps; figures draws its four figures. Skipped when the CIFAR-10 folder is absent.
// (Without data: empty paths on the command line are usage errors.)
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/data_present.h"
#include "tests/apps/app_process.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::read_text;
using posgrad::test::TempDir;

// The file's helpers and suites in a namespace of their own: in a unity batch (cmake/build_speed.cmake)
// other test files with helpers of the same names (kApp, kTiny, run, ...) come before or after it.
namespace posattn_app_tests {
namespace {
const fs::path kApp = fs::path(POSGRAD_BIN_DIR) / "posattn";
// One OpenMP thread: on a loaded machine two spinning threads can cost ten times the time.
const std::string kEnv = "OMP_NUM_THREADS=1 ";

int run(const std::string& args, const fs::path& log, const std::string& env = "") {
  return posgrad::test::run_app(kApp, args, log, kEnv + env);
}

// The metrics without the wall-clock fields: what must repeat exactly.
std::vector<nlohmann::json> metrics_without_time(const fs::path& run_dir) {
  return posgrad::test::metrics_without(run_dir, {"time_s", "time_per_sample_s"});
}

int64_t latest_step(const fs::path& run_dir) { return posgrad::test::latest_checkpoint_step(run_dir); }

// 600 images (480 train / 120 val) at 8x8, one block of width 16: 24 batches, 12 Adam steps per epoch.
const std::string kTiny =
    "-Ddata.image_size=8 -Ddata.small_dataset=600 -Dmodel.layers=1 -Dmodel.width=16 -Dmodel.heads=2 "
    "-Dmodel.ff_width=16 -Dmodel.output_hidden=16 -Dmodel.span=true -Dmodel.threshold=0.1 -Dtrain.epochs=3 "
    "-Dtrain.checkpoint_every=4 -Dtrain.eval_batch_size=50 -Dseed=5";
}  // namespace

BOOST_AUTO_TEST_SUITE(posattn_app, *boost::unit_test::precondition(posgrad::test::data_present("cifar10")))

BOOST_AUTO_TEST_CASE(short_run_resume_eval_and_nan) {
  TempDir tmp;
  fs::create_directories(tmp.path());
  const fs::path reference = tmp.path() / "reference";
  BOOST_REQUIRE_MESSAGE(run("--out " + reference.string() + " " + kTiny, tmp.path() / "ref.txt") == 0,
                        read_text(tmp.path() / "ref.txt"));
  // The protocol: one line per epoch with every metric, per-layer sigma and box.
  const auto records = metrics_without_time(reference);
  BOOST_REQUIRE_EQUAL(records.size(), 3u);
  double best = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    BOOST_TEST(r["epoch"] == i + 1);
    BOOST_TEST(r["step"] == 12 * (i + 1));
    for (const char* key : {"train_loss", "val_loss", "val_acc", "val_acc_max", "score_share"})
      BOOST_TEST(r[key].is_number(), key);
    best = std::max(best, r["val_acc"].get<double>());
    BOOST_TEST(r["val_acc_max"].get<double>() == best);
    BOOST_REQUIRE_EQUAL(r["layers"].size(), 1u);
    BOOST_TEST(r["layers"][0]["sigma"].size() == 2u);  // one sigma per image axis
    // sigma 0.3 on an 8x8 grid, t = 0.1: half-width ceil(2.146 * 0.3 * 7) = 5 at the start.
    BOOST_TEST(r["layers"][0]["half_width"][0].get<int>() <= 7);
    BOOST_TEST(r["layers"][0]["box_share"].get<double>() <= 1.0);
  }
  BOOST_TEST(records[0]["layers"][0]["half_width"][0] == 5);
  BOOST_TEST(records[0]["train_loss"].get<double>() < 2.6);
  const auto summary = nlohmann::json::parse(read_text(reference / "summary.json"));
  BOOST_TEST(summary["val_acc_max"].get<double>() == best);
  BOOST_TEST(summary["val_images"] == 120);
  BOOST_TEST(latest_step(reference) == 36);
  BOOST_TEST(fs::exists(reference / "checkpoints" / "best"));

  // eval scores the best checkpoint at exactly the accuracy the run logged as its maximum.
  BOOST_REQUIRE_MESSAGE(run("eval " + reference.string(), tmp.path() / "eval.txt") == 0, read_text(tmp.path() / "eval.txt"));
  const auto scored = nlohmann::json::parse(read_text(reference / "eval-val-best.json"));
  BOOST_TEST(scored["accuracy"].get<double>() == best);
  BOOST_TEST(scored["images"] == 120);
  BOOST_TEST(read_text(tmp.path() / "eval.txt").find("confusion matrix") != std::string::npos);
  BOOST_TEST(read_text(tmp.path() / "eval.txt").find(fmt::format("accuracy {:.4f}", best)) != std::string::npos);
  // The test split needs test_batch.bin, which the shared data folder does not have: one clear
  // line. A data folder with one (here a link to data_batch_1.bin) is scored, 10,000 images.
  const fs::path cifar = *posgrad::try_find_data_dir() / "cifar10", fake = tmp.path() / "fake_data" / "cifar10";
  if (!fs::exists(cifar / "test_batch.bin")) {
    BOOST_TEST(run("eval " + reference.string() + " --split test", tmp.path() / "test.txt") == 1);
    BOOST_TEST(read_text(tmp.path() / "test.txt").find("test_batch.bin") != std::string::npos);
  }
  fs::create_directories(fake);
  for (const auto& entry : fs::directory_iterator(cifar)) fs::create_symlink(entry.path(), fake / entry.path().filename());
  if (!fs::exists(fake / "test_batch.bin")) fs::create_symlink(cifar / "data_batch_1.bin", fake / "test_batch.bin");
  BOOST_REQUIRE_MESSAGE(run("eval " + reference.string() + " --split test", tmp.path() / "test.txt",
                            "POSGRAD_DATA_DIR=" + fake.parent_path().string() + " ") == 0,
                        read_text(tmp.path() / "test.txt"));
  const auto tested = nlohmann::json::parse(read_text(reference / "eval-test-best.json"));
  BOOST_TEST(tested["images"] == 10000);
  BOOST_TEST(tested["confusion"].size() == 10u);

  // figures: curves, spans (sigma and box per layer), the encoding heatmaps, attention on images.
  BOOST_REQUIRE_MESSAGE(run("figures " + reference.string() + " --images 2", tmp.path() / "fig.txt") == 0,
                        read_text(tmp.path() / "fig.txt"));
  for (const char* name : {"curves", "spans", "encoding", "attention"}) {
    BOOST_TEST(fs::file_size(reference / "figures" / (std::string(name) + ".png")) > 1000u, name);
    BOOST_TEST(fs::exists(reference / "figures" / (std::string(name) + ".svg")), name);
  }

  // The same run killed with SIGKILL after a checkpoint, then resumed: the same metrics.
  const fs::path killed = tmp.path() / "killed";
  const pid_t pid = fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    const std::string cmd = "exec env " + kEnv + kApp.string() + " --out " + killed.string() + " " + kTiny + " > " +
                            (tmp.path() / "killed.txt").string() + " 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  bool exited = false;
  while (latest_step(killed) < 16) {  // mid-epoch 2 (the extra checkpoint at step 16)
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  BOOST_REQUIRE_MESSAGE(!exited, "the run ended before it could be killed:\n" << read_text(tmp.path() / "killed.txt"));
  BOOST_TEST(!fs::exists(killed / "summary.json"));
  const int64_t stopped_at = latest_step(killed);
  BOOST_TEST_MESSAGE("killed after the checkpoint of step " << stopped_at);
  BOOST_REQUIRE_MESSAGE(run("--resume " + killed.string(), tmp.path() / "resumed.txt") == 0,
                        read_text(tmp.path() / "resumed.txt"));
  // The done line counts the steps this process ran (3 epochs of 12 steps).
  const std::string done = fmt::format("train done: {} steps (steps {}-36)", 36 - stopped_at, stopped_at + 1);
  BOOST_TEST(read_text(tmp.path() / "resumed.txt").find(done) != std::string::npos, read_text(tmp.path() / "resumed.txt"));
  const auto resumed = metrics_without_time(killed);
  BOOST_REQUIRE_EQUAL(resumed.size(), records.size());
  for (size_t i = 0; i < resumed.size(); ++i)
    BOOST_TEST(resumed[i] == records[i], "line " << i + 1 << ": " << resumed[i].dump() << " vs " << records[i].dump());

  // A NaN put into a parameter after step 14 stops the run naming it; the checkpoints stay.
  const fs::path poisoned = tmp.path() / "poisoned";
  const int rc = run("--out " + poisoned.string() + " " + kTiny +
                         " -Ddebug.nan_parameter=blocks.0.attn.k_proj.weight -Ddebug.nan_at_step=14",
                     tmp.path() / "nan.txt");
  const std::string log = read_text(tmp.path() / "nan.txt");
  BOOST_TEST(rc == 1, log);
  BOOST_TEST(log.find("blocks.0.attn.k_proj.weight") != std::string::npos, log);
  BOOST_TEST(log.find("step 15") != std::string::npos, log);
  BOOST_TEST(log.find("step-000000012") != std::string::npos, log);
  BOOST_TEST(latest_step(poisoned) == 12);
  BOOST_TEST(run("eval " + poisoned.string() + " --checkpoint latest", tmp.path() / "eval2.txt") == 0,
             read_text(tmp.path() / "eval2.txt"));
}

BOOST_AUTO_TEST_CASE(bad_input_gets_a_clear_error) {
  TempDir tmp;
  fs::create_directories(tmp.path());
  const fs::path log = tmp.path() / "log.txt";
  const auto fails_with = [&](const std::string& args, std::vector<std::string> needles) {
    const int rc = run("--out " + (tmp.path() / "r").string() + " --overwrite " + args, log);
    const std::string text = read_text(log);
    BOOST_TEST(rc == 1, args << ": " << text);
    for (const auto& n : needles) BOOST_TEST(text.find(n) != std::string::npos, args << ": '" << n << "' missing from " << text);
  };
  fails_with("-Ddata.dir=" + (tmp.path() / "no_data").string(),
             {(tmp.path() / "no_data").string(), "no such directory", "-Ddata.dir=FOLDER", "POSGRAD_DATA_DIR",
              "posgrad-data fetch cifar10 --dir " + (tmp.path() / "no_data").string()});
  fs::create_directories(tmp.path() / "empty_data");
  fails_with("-Ddata.dir=" + (tmp.path() / "empty_data").string(),
             {"no folder 'cifar10'", "empty_data", "-Ddata.dir",
              "posgrad-data fetch cifar10 --dir " + (tmp.path() / "empty_data").string()});
  fails_with("-Ddata.dataset=mnist -Ddata.dir=" + (tmp.path() / "empty_data").string(),
             {"no folder 'mnist'", "posgrad-data fetch mnist --dir " + (tmp.path() / "empty_data").string()});
  fails_with("-Ddata.image_size=12", {"data.image_size 12 does not fit", "32x32", "must divide 32"});
  fails_with("-Dmodel.positional=sirne", {"unknown scheme 'sirne'", "siren", "txl_baseline"});
  fails_with("-Dmodel.attention=fast", {"model.attention", "'fast'", "auto, reference, fused"});
  fails_with("-Dmodel.path=quick", {"'model.path' is the old name of 'model.attention'", "'quick'"});
  fails_with("-Ddata.dataset=smnist -Dmodel.positional_dims=2", {"positional_dims = 2 needs an image grid"});
  fails_with("-Dmodel.positional_options=omega", {"'omega' is not key=value"});
  fails_with("-Dmodel.positional=t5_bias", {"t5_bias", "1-D sequence positions"});  // a 1-D-only scheme on the grid
  fails_with("-Ddata.train_batches=6", {"data.train_batches", "6"});
  fails_with("-Ddata.dataset=mnist -Ddata.train_batches=2", {"data.train_batches (2) applies to cifar10 only"});
  // A partial copy of CIFAR-10 (one batch file): all five batches are read by default, and the
  // error names the missing file and the setting that reads fewer.
  const fs::path partial = tmp.path() / "partial";
  fs::create_directories(partial / "cifar10");
  fs::create_symlink(*posgrad::try_find_data_dir() / "cifar10" / "data_batch_1.bin", partial / "cifar10" / "data_batch_1.bin");
  fails_with("-Ddata.dir=" + partial.string(), {"data_batch_2.bin", "file not found"});
  BOOST_TEST(!fs::exists(tmp.path() / "r" / "config.yaml"));  // stopped before the run folder was written
}

// data.train_batches=1 trains on data_batch_1 alone (the GPU bundle carries only it): 10,000
// images, split 8,000 / 2,000.
BOOST_AUTO_TEST_CASE(one_training_batch_is_enough_with_train_batches) {
  TempDir tmp;
  const fs::path partial = tmp.path() / "partial";
  fs::create_directories(partial / "cifar10");
  fs::create_symlink(*posgrad::try_find_data_dir() / "cifar10" / "data_batch_1.bin", partial / "cifar10" / "data_batch_1.bin");
  const fs::path out = tmp.path() / "run";
  const int rc = run(fmt::format("--config configs/posattn/quick/2d_siren.yaml -Ddata.dir={} -Ddata.train_batches=1 "
                                 "-Dtrain.max_steps=1 -Dtrain.eval_batch_size=500 --out {}",
                                 partial.string(), out.string()),
                     tmp.path() / "log.txt");
  BOOST_REQUIRE_MESSAGE(rc == 0, read_text(tmp.path() / "log.txt"));
  const auto summary = nlohmann::json::parse(read_text(out / "summary.json"));
  BOOST_TEST(summary["train_images"] == 8000);
  BOOST_TEST(summary["val_images"] == 2000);
  BOOST_TEST(summary["steps"] == 1);
}

BOOST_AUTO_TEST_CASE(every_quick_preset_trains) {
  TempDir tmp;
  fs::create_directories(tmp.path());
  for (const char* arm : {"1d_baseline", "1d_siren", "1d_span", "1d_span_t01", "2d_siren", "2d_span", "2d_span_t01"}) {
    const fs::path out = tmp.path() / arm;
    const int rc = run(fmt::format("--config configs/posattn/quick/{}.yaml -Ddata.small_dataset=100 -Dtrain.max_steps=2 --out {}",
                                   arm, out.string()),
                       tmp.path() / "log.txt");
    BOOST_TEST(rc == 0, arm << ": " << read_text(tmp.path() / "log.txt"));
    if (rc == 0) BOOST_TEST(nlohmann::json::parse(read_text(out / "summary.json"))["steps"] == 2, arm);
  }
}

BOOST_AUTO_TEST_SUITE_END()

// Issue 23 item 8: an empty run folder is a usage error (no data needed: the command line stops it).
BOOST_AUTO_TEST_SUITE(posattn_app_command_line)

BOOST_AUTO_TEST_CASE(empty_paths_are_usage_errors) {
  TempDir tmp;
  for (const char* args : {"eval ''", "figures ''", "--out ''", "--resume ''"}) {
    BOOST_TEST(run(args, tmp.path() / "log.txt") == 2, args);
    const std::string log = read_text(tmp.path() / "log.txt");
    BOOST_TEST(log.find("an empty path is not a folder or a file") != std::string::npos, args << ": " << log);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace posattn_app_tests
