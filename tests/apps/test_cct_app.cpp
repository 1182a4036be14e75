// End-to-end tests of the cct app on real CIFAR-10 (a few hundred images, a one-block model of
// width 16, two epochs): the built executable logs validation and test accuracy per epoch and
// writes both metrics (the paper's best test accuracy up to an epoch, and the test accuracy of
// the checkpoint chosen on validation) to summary.json; a run stopped after its first epoch and
// resumed with --resume logs exactly what an uninterrupted run logs; eval scores the best
// checkpoint at the accuracy the run logged; figures draws the learning curves and the grid APE's
// angles; every scheme preset trains a step; bad input (an image size the tokenizer cannot
// handle, an unknown scheme) gets one clear line. Skipped when the CIFAR-10 folder is absent.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/data_present.h"
#include "tests/apps/app_process.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::read_text;
using posgrad::test::TempDir;

// The file's helpers and suites in a namespace of their own: in a unity batch (cmake/build_speed.cmake)
// other test files with helpers of the same names (kApp, kTiny, run, ...) come before or after it.
namespace cct_app_tests {
namespace {

const fs::path kApp = fs::path(POSGRAD_BIN_DIR) / "cct";

int run(const std::string& args, const fs::path& log) { return posgrad::test::run_app(kApp, args, log, "OMP_NUM_THREADS=1 "); }

// 500 images (100 test / 40 val / 360 train), one block of width 16, batch 32: 11 steps an epoch.
const std::string kTiny =
    "--config configs/cct/quick.yaml --config configs/cct/schemes/ape_grid.yaml -Ddata.small_dataset=500 "
    "-Dmodel.layers=1 -Dmodel.width=16 -Dmodel.heads=2 -Dmodel.ff_width=32 -Dtrain.batch_size=32 -Dtrain.epochs=2 "
    "-Dtrain.warmup_epochs=1 -Dtrain.paper_epochs=[1,2] -Dtrain.eval_batch_size=64 -Dseed=3";

}  // namespace

BOOST_AUTO_TEST_SUITE(cct_app, *boost::unit_test::precondition(posgrad::test::data_present("cifar10")))

BOOST_AUTO_TEST_CASE(train_resume_eval_figures) {
  TempDir tmp;
  const fs::path ref = tmp / "ref", part = tmp / "part";
  BOOST_REQUIRE_MESSAGE(run("--out " + ref.string() + " " + kTiny, tmp / "ref.txt") == 0, read_text(tmp / "ref.txt"));
  const auto metrics = posgrad::test::metrics_without(ref, {"time_s", "time_per_sample_s"});
  BOOST_REQUIRE_EQUAL(metrics.size(), 2u);
  for (const char* key : {"val_acc", "test_acc", "train_loss", "val_loss", "lr"}) BOOST_TEST(metrics[1].contains(key), key);
  const auto summary = nlohmann::json::parse(read_text(ref / "summary.json"));
  const double t1 = metrics[0]["test_acc"], t2 = metrics[1]["test_acc"];
  BOOST_TEST(summary["best_test_acc_upto_epoch_1"].get<double>() == t1);
  BOOST_TEST(summary["best_test_acc_upto_epoch_2"].get<double>() == std::max(t1, t2));
  const int64_t best_epoch = summary["best_val_epoch"];
  BOOST_TEST(summary["test_acc_of_best_val"].get<double>() == metrics[best_epoch - 1]["test_acc"].get<double>());
  BOOST_TEST(summary["test_images"].get<int64_t>() == 100);
  BOOST_TEST(summary["test_source"].get<std::string>().find("held out") != std::string::npos);
  BOOST_TEST(summary["train_images"].get<int64_t>() > 300);

  // Stopped after its first epoch (max_steps), then resumed without the limit (its config.yaml
  // edited, as a user would): the same metrics as the uninterrupted run.
  BOOST_REQUIRE(run("--out " + part.string() + " " + kTiny + " -Dtrain.max_steps=11", tmp / "p1.txt") == 0);
  std::string config = read_text(part / "config.yaml");
  const auto at = config.find("max_steps: 11");
  BOOST_REQUIRE(at != std::string::npos);
  config.replace(at, 13, "max_steps: 0");
  std::ofstream(part / "config.yaml") << config;
  BOOST_REQUIRE_MESSAGE(run("train --resume " + part.string(), tmp / "p2.txt") == 0, read_text(tmp / "p2.txt"));
  BOOST_TEST(posgrad::test::metrics_without(part, {"time_s", "time_per_sample_s"}) == metrics);

  // eval scores the best checkpoint (chosen on validation) at the test accuracy the run logged.
  BOOST_REQUIRE(run("eval " + ref.string() + " --split test", tmp / "eval.txt") == 0);
  const auto e = nlohmann::json::parse(read_text(ref / "eval-test-best.json"));
  BOOST_TEST(std::abs(e["accuracy"].get<double>() - summary["test_acc_of_best_val"].get<double>()) < 1e-12);

  BOOST_REQUIRE_MESSAGE(run("figures " + ref.string(), tmp / "fig.txt") == 0, read_text(tmp / "fig.txt"));
  for (const char* f : {"curves.png", "curves.svg", "ape_angles.png", "ape_angles.svg"})
    BOOST_TEST(fs::file_size(ref / "figures" / f) > 1000u, f);
}

BOOST_AUTO_TEST_CASE(every_scheme_preset_trains_a_step) {
  TempDir tmp;
  for (const auto& entry : fs::directory_iterator(fs::path(POSGRAD_SOURCE_DIR) / "configs/cct/schemes")) {
    const std::string name = entry.path().stem().string();
    const std::string args = "--config configs/cct/quick.yaml --config " + entry.path().string() +
                             " -Ddata.small_dataset=300 -Dmodel.layers=1 -Dmodel.width=16 -Dmodel.heads=2 -Dmodel.ff_width=32 "
                             "-Dtrain.batch_size=16 -Dtrain.max_steps=1 --out " + (tmp / name).string();
    BOOST_TEST(run(args, tmp / (name + ".txt")) == 0, name << ": " << read_text(tmp / (name + ".txt")));
  }
}

BOOST_AUTO_TEST_CASE(bad_input_one_clear_line) {
  TempDir tmp;
  BOOST_TEST(run(kTiny + " -Dmodel.conv_kernel=9 -Dmodel.pool_kernel=25 -Dmodel.pool_stride=25 --out " + (tmp / "a").string(),
                 tmp / "a.txt") != 0);
  const std::string a = read_text(tmp / "a.txt");
  BOOST_TEST(a.find("CCT tokenizer (conv 9x9 stride 1 padding 0, max_pool 25x25 stride 25 padding 0) cannot tokenize a 32x32 image") !=
             std::string::npos, a);
  BOOST_TEST(!fs::exists(tmp / "a" / "config.yaml"));  // nothing half-written
  BOOST_TEST(run(kTiny + " -Dmodel.positional=nope --out " + (tmp / "b").string(), tmp / "b.txt") != 0);
  BOOST_TEST(read_text(tmp / "b.txt").find("model.positional: unknown scheme 'nope'") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cct_app_tests
