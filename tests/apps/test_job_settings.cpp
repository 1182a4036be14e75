// Jobs other than training on the command line (job_settings.h, cli.h): a job that takes
// settings gets --config and -D from before or after its name and applies only the keys it
// takes, over the run's settings, putting the others back and naming them; a job that does not
// take settings refuses --config and -D; every job refuses --out, --overwrite and --resume.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>


#include "apps/common/cli.h"
#include "apps/common/job_settings.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::apps::AppCommandLine;
using posgrad::apps::JobSettings;
using posgrad::apps::Settings;
using posgrad::test::TempDir;

// The file's helpers and suites in a namespace of their own: in a unity batch (cmake/build_speed.cmake)
// other test files with helpers of the same names (kApp, kTiny, run, ...) come before or after it.
namespace job_settings_tests {
namespace {

struct App {
  double lr = 0.1;
  int64_t batch = 8;
  std::vector<int64_t> sizes{1, 2};
  std::string device = "cpu";
  Settings settings;
  std::vector<std::string> ignored;  // what the settings job ignored
  bool plain_ran = false;
  App() {
    settings.add("train.lr", lr, "learning rate").above(0);
    settings.add("train.sizes", sizes, "sizes");
    settings.add("eval.batch", batch, "eval streams").at_least(1);
    settings.add("device", device, "device");
  }
  int run(std::vector<std::string> args) {
    AppCommandLine cli("testapp", "a test app", settings);
    cli.on_train([](const posgrad::apps::TrainRequest&) {});
    cli.add_job("eval", "takes settings", [&](const JobSettings& job) {
      lr = 0.5;  // as if the run's config.yaml said so
      ignored = apply_job_settings(settings, job, {"device", "eval."}, "testapp eval");
    });
    cli.add_job("plain", "takes none", [&] { plain_ran = true; });
    args.insert(args.begin(), "testapp");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    return cli.run(static_cast<int>(argv.size()), argv.data());
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(job_settings)

BOOST_AUTO_TEST_CASE(a_job_takes_its_settings_before_or_after_its_name) {
  TempDir tmp;
  const fs::path preset = tmp.path() / "p.yaml";
  std::ofstream(preset) << "eval:\n  batch: 3\ntrain:\n  sizes: [7, 8, 9]\n";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-Deval.batch=2", "-Ddevice=cuda", "-Dtrain.lr=9", "eval"},
        std::vector<std::string>{"eval", "-Deval.batch=2", "-Ddevice=cuda", "-Dtrain.lr=9"},
        std::vector<std::string>{"--config", preset.string(), "eval", "-Deval.batch=2", "-Ddevice=cuda", "-Dtrain.lr=9"}}) {
    App app;
    BOOST_TEST(app.run(args) == 0);
    BOOST_TEST(app.batch == 2);           // taken: eval.*, the override after the preset
    BOOST_TEST(app.device == "cuda");     // taken
    BOOST_TEST(app.lr == 0.5);            // ignored: the run's value stays
    BOOST_TEST(app.sizes == std::vector<int64_t>({1, 2}), boost::test_tools::per_element());
    const bool with_preset = args.front() == "--config";
    BOOST_TEST(app.ignored == (with_preset ? std::vector<std::string>{"train.lr", "train.sizes"}
                                           : std::vector<std::string>{"train.lr"}),
               boost::test_tools::per_element());
  }
  App bad;
  BOOST_TEST(bad.run({"eval", "-Deval.bacth=2"}) == 1);  // a mistake is an error, as for training
}

BOOST_AUTO_TEST_CASE(other_jobs_refuse_settings_and_every_job_refuses_the_options_of_training) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-Dtrain.lr=9", "plain"}, std::vector<std::string>{"--out", "x", "plain"},
        std::vector<std::string>{"--out", "x", "eval"}, std::vector<std::string>{"eval", "--resume", "x"},
        std::vector<std::string>{"eval", "--overwrite"}}) {
    App app;
    BOOST_TEST(app.run(args) == 1, args.front() << " " << args.back());
    BOOST_TEST(!app.plain_ran);
  }
  App app;
  BOOST_TEST(app.run({"plain"}) == 0);
  BOOST_TEST(app.plain_ran);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace job_settings_tests
