// Run folder: created with parents, config.yaml loads back, metrics.jsonl lines parse as JSON,
// summary.json is written atomically (no temporary file left), existing folders are refused
// unless overwriting or appending.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "apps/common/cli.h"
#include "apps/common/run_dir.h"
#include "tensor/error.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::read_text;
using posgrad::test::TempDir;
using posgrad::Error;
using posgrad::apps::Config;
using posgrad::apps::ExistingRun;
using posgrad::apps::RunDir;

namespace {

std::vector<std::string> read_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Files whose names hold ".tmp." anywhere under `dir`.
int temp_files(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) ++n;
  return n;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(run_dir)

BOOST_AUTO_TEST_CASE(writes_config_metrics_summary) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "runs" / "app" / "one";
  Config config = Config::parse("train:\n  lr: 0.01\n  steps: 3\nname: x\n", "defaults.yaml");
  config.apply_override("train.steps=5");
  {
    RunDir run(dir);
    BOOST_TEST(fs::is_directory(dir));
    BOOST_TEST(run.path() == dir);
    run.write_config(config);
    for (int step = 1; step <= 3; ++step)
      run.log_metrics({{"step", step}, {"loss", 1.0 / step}, {"lr", 1e-3}});
    run.log_metrics({{"step", 4}, {"time_s", 99.5}});
    // Flushed: readable while the run is still open.
    BOOST_TEST(read_lines(run.metrics_path()).size() == 4u);
    run.write_summary({{"final_loss", 0.25}, {"accuracy", 0.99}});
    run.write_summary({{"final_loss", 0.125}, {"accuracy", 1.0}});  // replaced
    BOOST_TEST(run.figure_path("attention") == dir / "figures" / "attention.png");
    BOOST_TEST(fs::is_directory(dir / "figures"));
    BOOST_TEST(run.figure_path("loss.svg") == dir / "figures" / "loss.svg");
    BOOST_TEST(run.checkpoint_path("step_100.safetensors") ==
               dir / "checkpoints" / "step_100.safetensors");
    BOOST_TEST(fs::is_directory(dir / "checkpoints"));
    run.write_text("notes/readme.txt", "hello\n");
    BOOST_TEST(error_of([&] { run.log_metrics(nlohmann::json::array({1, 2})); }) != "");
  }
  const Config back = Config::load(dir / "config.yaml");
  BOOST_TEST(back.get<double>("train.lr") == 0.01);
  BOOST_TEST(back.get<int64_t>("train.steps") == 5);
  BOOST_TEST(back.get<std::string>("name") == "x");

  const std::vector<std::string> lines = read_lines(dir / "metrics.jsonl");
  BOOST_REQUIRE(lines.size() == 4u);
  for (size_t i = 0; i < lines.size(); ++i) {
    const nlohmann::json j = nlohmann::json::parse(lines[i]);
    BOOST_TEST(j.is_object());
    BOOST_TEST(j["step"].get<int>() == static_cast<int>(i) + 1);
    BOOST_TEST(j.contains("time_s"));
  }
  BOOST_TEST(nlohmann::json::parse(lines[0])["loss"].get<double>() == 1.0);
  BOOST_TEST(nlohmann::json::parse(lines[3])["time_s"].get<double>() == 99.5);

  const nlohmann::json summary = nlohmann::json::parse(read_text(dir / "summary.json"));
  BOOST_TEST(summary["final_loss"].get<double>() == 0.125);
  BOOST_TEST(read_text(dir / "notes" / "readme.txt") == "hello\n");
  BOOST_TEST(temp_files(dir) == 0);
}

BOOST_AUTO_TEST_CASE(refuses_a_folder_with_files) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "run";
  { RunDir run(dir); run.log_metrics({{"step", 1}}); run.write_summary({{"x", 1}}); }
  const std::string msg = error_of([&] { RunDir again(dir); });
  BOOST_TEST(msg.find(dir.string()) != std::string::npos);
  BOOST_TEST(msg.find("--overwrite") != std::string::npos);
  BOOST_TEST(msg.find("metrics.jsonl") != std::string::npos);

  // An existing empty folder is fine.
  fs::create_directories(tmp.path() / "empty");
  BOOST_CHECK_NO_THROW(RunDir(tmp.path() / "empty"));

  // A file where the folder should be is an error.
  std::ofstream(tmp.path() / "file") << "x";
  BOOST_TEST(error_of([&] { RunDir r(tmp.path() / "file", ExistingRun::Overwrite); }) != "");
}

BOOST_AUTO_TEST_CASE(overwrite_restarts_append_continues) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "run";
  {
    RunDir run(dir);
    run.log_metrics({{"step", 1}});
    run.log_metrics({{"step", 2}});
    run.write_summary({{"x", 1}});
  }
  {
    RunDir run(dir, ExistingRun::Append);
    run.log_metrics({{"step", 3}});
  }
  BOOST_TEST(read_lines(dir / "metrics.jsonl").size() == 3u);
  BOOST_TEST(fs::exists(dir / "summary.json"));
  {
    RunDir run(dir, ExistingRun::Overwrite);
    run.log_metrics({{"step", 1}});
  }
  BOOST_TEST(read_lines(dir / "metrics.jsonl").size() == 1u);
  BOOST_TEST(!fs::exists(dir / "summary.json"));
}

BOOST_AUTO_TEST_CASE(open_run_dir_records_config_and_command) {
  TempDir tmp;
  fs::create_directories(tmp.path() / "configs");
  std::ofstream(tmp.path() / "configs" / "myapp.yaml") << "seed: 1\n";
  posgrad::apps::CommandLineOptions options;
  options.source_dir = tmp.path();
  const std::string out = (tmp.path() / "out dir").string();
  std::vector<const char*> argv{"myapp", "-Dseed=2", "--out", out.c_str()};
  const auto cl = posgrad::apps::parse_command_line(4, argv.data(), "myapp", {}, options);
  {
    RunDir run = posgrad::apps::open_run_dir(cl);
    RunDir moved = std::move(run);
    moved.log_metrics({{"step", 1}});
  }
  BOOST_TEST(Config::load(tmp.path() / "out dir" / "config.yaml").get<int64_t>("seed") == 2);
  BOOST_TEST(read_text(tmp.path() / "out dir" / "command.txt") ==
             "myapp -Dseed=2 --out '" + out + "'\n");
  BOOST_TEST(read_lines(tmp.path() / "out dir" / "metrics.jsonl").size() == 1u);
  // Second time: refused, unless --overwrite.
  BOOST_TEST(error_of([&] { posgrad::apps::open_run_dir(cl); }).find("--overwrite") != std::string::npos);
  auto again = cl;
  again.overwrite = true;
  BOOST_CHECK_NO_THROW(posgrad::apps::open_run_dir(again));
}

BOOST_AUTO_TEST_SUITE_END()
