// Run folder: created with parents, config.yaml loads back, metrics.jsonl lines parse as JSON,
// summary.json is written atomically (no temporary file left), existing folders are refused
// unless overwriting or appending, and a folder another RunDir holds is refused, naming the holder,
// before anything in it changes.
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
using posgrad::apps::Settings;
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
  double lr = 0.01;
  int64_t steps = 3;
  std::string name = "x";
  Settings config;
  config.add("train.lr", lr, "");
  config.add("train.steps", steps, "");
  config.add("name", name, "");
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
  steps = 0;
  config.load_yaml_file(dir / "config.yaml");
  BOOST_TEST(lr == 0.01);
  BOOST_TEST(steps == 5);
  BOOST_TEST(name == "x");

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

// Issue 23 item 1: two writers of one folder mixed their runs (and --overwrite removed the first
// one's checkpoints under it). The lock is flock(2) on <run>/.lock: a second open file of it is
// refused even in the same process. Processes and kill -9: count24_app/a_second_writer_*.
BOOST_AUTO_TEST_CASE(a_second_writer_is_refused_naming_the_holder_before_anything_changes) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "run";
  {
    RunDir first(dir);
    first.log_metrics({{"step", 1}});
    first.write_summary({{"x", 1}});
    fs::create_directories(dir / "checkpoints" / "step-000000001");
    for (const ExistingRun mode : {ExistingRun::Overwrite, ExistingRun::Append}) {
      const std::string msg = error_of([&] { RunDir second(dir, mode); });
      BOOST_TEST(msg.find("run folder '" + dir.string() + "' is in use by pid " + std::to_string(::getpid())) !=
                     std::string::npos,
                 msg);
      BOOST_TEST(msg.find("test_apps") != std::string::npos, msg);  // the holder's command line
      BOOST_TEST(msg.find(" UTC") != std::string::npos, msg);       // since when
      BOOST_TEST(msg.find('\n') == std::string::npos, msg);
    }
    // Nothing of the first run was touched by the refused writers.
    BOOST_TEST(fs::exists(dir / "summary.json"));
    BOOST_TEST(fs::exists(dir / "checkpoints" / "step-000000001"));
    BOOST_TEST(read_lines(dir / "metrics.jsonl").size() == 1u);
    // A moved RunDir keeps the lock.
    RunDir moved(std::move(first));
    BOOST_TEST(error_of([&] { RunDir second(dir, ExistingRun::Append); }) != "");
  }
  // Released with its RunDir: the next writer gets the folder, and the lock file it leaves is
  // not counted as a file of a run.
  BOOST_CHECK_NO_THROW(RunDir(dir, ExistingRun::Append));
  const fs::path only_lock = tmp.path() / "only_lock";
  { RunDir run(only_lock); }
  fs::remove(only_lock / "metrics.jsonl");
  BOOST_CHECK_NO_THROW(RunDir(only_lock, ExistingRun::Refuse));
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
  int64_t seed = 2;
  Settings settings;
  settings.add("seed", seed, "");
  posgrad::apps::TrainRequest request;
  request.out_dir = tmp.path() / "out dir";
  request.command = "myapp -Dseed=2";
  {
    RunDir run = posgrad::apps::open_run_dir(request, settings);
    RunDir moved = std::move(run);
    moved.log_metrics({{"step", 1}});
  }
  BOOST_TEST(read_text(request.out_dir / "config.yaml") == "seed: 2\n");
  BOOST_TEST(read_text(request.out_dir / "command.txt") == "myapp -Dseed=2\n");
  // Second time: refused, unless --overwrite.
  BOOST_TEST(error_of([&] { posgrad::apps::open_run_dir(request, settings); }).find("--overwrite") != std::string::npos);
  // Resumed: the command is added, config.yaml and metrics.jsonl are kept.
  request.resume = true;
  request.command = "myapp --resume run";
  {
    RunDir run = posgrad::apps::open_run_dir(request, settings);
    run.log_metrics({{"step", 2}});
  }
  BOOST_TEST(read_text(request.out_dir / "command.txt") == "myapp -Dseed=2\nmyapp --resume run\n");
  BOOST_TEST(read_lines(request.out_dir / "metrics.jsonl").size() == 2u);
  request.resume = false;
  request.overwrite = true;
  BOOST_CHECK_NO_THROW(posgrad::apps::open_run_dir(request, settings));
  BOOST_TEST(read_lines(request.out_dir / "metrics.jsonl").empty());
}

BOOST_AUTO_TEST_CASE(metrics_after_a_step_are_dropped_for_a_resume) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "run";
  {
    RunDir run(dir);
    for (int step = 10; step <= 50; step += 10) run.log_metrics({{"step", step}, {"loss", 1.0 / step}});
    run.log_metrics({{"note", "no step"}});
  }
  // A process killed in the middle of a line leaves half of it.
  { std::ofstream(dir / "metrics.jsonl", std::ios::app) << "{\"step\": 60, \"lo"; }
  RunDir run(dir, ExistingRun::Append);
  BOOST_TEST(run.read_metrics().size() == 6u);
  run.drop_metrics_after(30);
  run.log_metrics({{"step", 40}, {"loss", 0.5}});
  const auto records = run.read_metrics();
  BOOST_REQUIRE(records.size() == 5u);
  BOOST_TEST(records[2]["step"].get<int>() == 30);
  BOOST_TEST(records[3]["note"].get<std::string>() == "no step");
  BOOST_TEST(records[4]["loss"].get<double>() == 0.5);
  // A broken line that is not the last one is an error naming the file and the line.
  { std::ofstream(dir / "metrics.jsonl", std::ios::app) << "garbage\n{\"step\": 1}\n"; }
  BOOST_TEST(error_of([&] { run.read_metrics(); }).find("line 6") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
