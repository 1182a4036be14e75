// Command line (AppCommandLine on CLI11): the training job with and without the `train` word,
// presets applied in order then -D overrides in both spellings, --out / --overwrite, --resume
// reading the run's own config.yaml (and refusing --config, -D and --out beside it), other jobs,
// empty paths refused (not read as "not given"), and the exit statuses: 0, 1 for an error in the
// job or the settings, 2 for a usage error.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>


#include "apps/common/cli.h"
#include "tensor/error.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::apps::AppCommandLine;
using posgrad::apps::Settings;
using posgrad::apps::TrainRequest;
using posgrad::test::TempDir;

namespace {

struct App {
  int64_t seed = 0;
  double lr = 0.1;
  int64_t steps = 100;
  Settings settings;
  std::optional<TrainRequest> request;  // what the training job was given
  bool evaluated = false;
  std::string eval_run;
  App() {
    settings.add("seed", seed, "seed");
    settings.add("train.lr", lr, "learning rate").above(0);
    settings.add("train.steps", steps, "steps").at_least(1);
  }
  int run(std::vector<std::string> args) {
    AppCommandLine cli("testapp", "a test app", settings);
    cli.on_train([&](const TrainRequest& r) { request = r; });
    cli.add_job("eval", "evaluate", [&] { evaluated = true; }).required_path("run", eval_run, "the run folder");
    args.insert(args.begin(), "testapp");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    return cli.run(static_cast<int>(argv.size()), argv.data());
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(cli)

BOOST_AUTO_TEST_CASE(train_is_the_default_job_and_takes_presets_then_overrides) {
  TempDir tmp;
  const fs::path a = tmp.path() / "a.yaml", b = tmp.path() / "b.yaml";
  std::ofstream(a) << "seed: 5\ntrain:\n  lr: 0.5\n";
  std::ofstream(b) << "train:\n  lr: 0.25\n";
  App app;
  BOOST_TEST(app.run({"--config", a.string(), "--config=" + b.string(), "-Dtrain.steps=7", "-D", "seed=9",
                      "--out", (tmp.path() / "run").string()}) == 0);
  BOOST_REQUIRE(app.request.has_value());
  BOOST_TEST(app.seed == 9);       // -D after the preset wins
  BOOST_TEST(app.lr == 0.25);      // the second preset after the first
  BOOST_TEST(app.steps == 7);
  BOOST_TEST(app.request->out_dir == tmp.path() / "run");
  BOOST_TEST(app.request->presets.size() == 2u);
  BOOST_TEST(!app.request->resume);
  BOOST_TEST(!app.request->overwrite);
  BOOST_TEST(app.request->command.find("-Dtrain.steps=7") != std::string::npos);

  App with_word;
  BOOST_TEST(with_word.run({"train", "-Dtrain.lr=0.125", "--overwrite"}) == 0);
  BOOST_TEST(with_word.lr == 0.125);
  BOOST_TEST(with_word.request->overwrite);
  BOOST_TEST(with_word.request->out_dir.string().rfind("runs/testapp/", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(presets_are_found_in_the_source_tree) {
  // configs/count24_seed.yaml is in the source tree, not in the test's working folder.
  Settings s;
  double lr = 1;
  int64_t steps = 1, log_every = 1, eval_every = 1, checkpoint_every = 1;
  s.add("train.lr", lr, "");
  s.add("train.steps", steps, "");
  s.add("train.log_every", log_every, "");
  s.add("train.eval_every", eval_every, "");
  s.add("train.checkpoint_every", checkpoint_every, "");
  const fs::path found = posgrad::apps::resolve_preset("configs/count24_seed.yaml");
  s.load_yaml_file(found);
  BOOST_TEST(lr == 5e-5);
  BOOST_CHECK_THROW(posgrad::apps::resolve_preset("configs/no_such_preset.yaml"), posgrad::Error);
}

BOOST_AUTO_TEST_CASE(resume_reads_the_runs_own_settings) {
  TempDir tmp;
  App first;
  first.settings.apply_override("train.lr=0.0625");
  std::ofstream(tmp.path() / "config.yaml") << first.settings.to_yaml();
  App app;
  BOOST_TEST(app.run({"--resume", tmp.path().string()}) == 0);
  BOOST_TEST(app.lr == 0.0625);
  BOOST_TEST(app.request->resume);
  BOOST_TEST(app.request->out_dir == tmp.path());
  // Mixed with settings or another folder: an error, status 1, the job never runs.
  for (const auto& extra : std::vector<std::vector<std::string>>{{"-Dseed=1"}, {"--config", "x.yaml"}, {"--out", "y"}}) {
    App mixed;
    std::vector<std::string> args{"--resume", tmp.path().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    BOOST_TEST(mixed.run(args) == 1);
    BOOST_TEST(!mixed.request.has_value());
  }
  App not_a_run;
  BOOST_TEST(not_a_run.run({"--resume", (tmp.path() / "nothing").string()}) == 1);
}

BOOST_AUTO_TEST_CASE(other_jobs_and_exit_statuses) {
  App app;
  BOOST_TEST(app.run({"eval", "some/run"}) == 0);
  BOOST_TEST(app.evaluated);
  BOOST_TEST(app.eval_run == "some/run");
  BOOST_TEST(!app.request.has_value());
  App bad_setting;
  BOOST_TEST(bad_setting.run({"-Dtrain.lr=-1"}) == 1);  // the settings are refused: the job never runs
  BOOST_TEST(!bad_setting.request.has_value());
  App unknown_option;
  BOOST_TEST(unknown_option.run({"--learning-rate", "3"}) == 2);
  App missing_value;
  BOOST_TEST(missing_value.run({"--out"}) == 2);
  App missing_preset;
  BOOST_TEST(missing_preset.run({"--config", "nowhere.yaml"}) == 1);
  App throwing;
  {
    AppCommandLine cli("testapp", "", throwing.settings);
    cli.on_train([](const TrainRequest&) { posgrad::fail("something broke"); });
    const char* argv[] = {"testapp"};
    BOOST_TEST(cli.run(1, argv) == 1);
  }
}

// Issue 23 item 8: `--resume ""` (an unset shell variable) started a fresh run in a new default
// folder, and `--out ""` used the default folder.
BOOST_AUTO_TEST_CASE(empty_paths_are_usage_errors) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--resume", ""}, {"--resume="}, {"--out", ""}, {"--out="}, {"--config", ""}, {"train", "--resume", ""}}) {
    App app;
    BOOST_TEST(app.run(args) == 2, args[0]);
    BOOST_TEST(!app.request.has_value(), args[0]);
  }
  App empty_run;
  BOOST_TEST(empty_run.run({"eval", ""}) == 2);
  BOOST_TEST(!empty_run.evaluated);
}

BOOST_AUTO_TEST_SUITE_END()
