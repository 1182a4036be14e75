// End-to-end test of the count24 app: runs the built executable with a short schedule into a
// temporary run folder and checks what it wrote (summary accuracy, attention on 2s and 4s,
// metrics, checkpoint, figure), and that bad input gives a clear error and a non-zero exit.
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tensor/device.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::read_text;
using posgrad::test::TempDir;

namespace {
const fs::path kApp = fs::path(POSGRAD_BIN_DIR) / "count24";

int run(const std::string& args, const fs::path& log) {
  const std::string cmd = kApp.string() + " " + args + " > " + log.string() + " 2>&1";
  return std::system(cmd.c_str());
}
}  // namespace

BOOST_AUTO_TEST_SUITE(count24_app)

BOOST_AUTO_TEST_CASE(short_run_reaches_its_accuracy_and_writes_the_run_folder) {
  TempDir tmp;
  const fs::path out = tmp.path() / "run";
  fs::create_directories(tmp.path());
  const int rc = run("--out " + out.string() + " -Dtrain.steps=300 -Dtrain.eval_every=100 -Dtrain.log_every=50 "
                     "-Ddata.train_size=20000 -Dtrain.checkpoint_every=100",
                     tmp.path() / "log.txt");
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
  BOOST_TEST(fs::exists(out / "checkpoints" / "checkpoint" / "model.safetensors"));
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
  BOOST_TEST(read_text(tmp.path() / "log.txt").find("unknown optimizer") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(divergence_is_reported_not_hidden) {
  TempDir tmp;
  fs::create_directories(tmp.path());
  const int rc = run("--out " + (tmp.path() / "d").string() + " -Dtrain.optimizer=sgd -Dtrain.lr=1e30 -Dtrain.steps=50",
                     tmp.path() / "log.txt");
  const std::string log = read_text(tmp.path() / "log.txt");
  BOOST_TEST(rc != 0, log);
  BOOST_TEST((log.find("diverged") != std::string::npos || log.find("non-finite") != std::string::npos), log);
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
