// Command line: --config, -D overrides in both spellings, --out, --overwrite, --help, the
// default config looked up in the source tree, and errors for anything else.
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "apps/common/cli.h"
#include "tensor/error.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::TempDir;
using posgrad::Error;
using posgrad::apps::CommandLine;
using posgrad::apps::CommandLineOptions;
using posgrad::apps::parse_command_line;

namespace {

// A source tree with configs/testapp.yaml in a temporary folder.
struct Fixture {
  TempDir dir;
  fs::path config;
  CommandLineOptions options;
  Fixture() {
    fs::create_directories(dir.path() / "configs");
    config = dir.path() / "configs" / "testapp.yaml";
    std::ofstream(config) << "seed: 1\ntrain:\n  lr: 0.1\n  steps: 100\n  layers: [1, 2]\n";
    options.source_dir = dir.path();
    options.help_stream = nullptr;
  }
  CommandLine parse(std::vector<std::string> args) const {
    args.insert(args.begin(), "testapp");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    return parse_command_line(static_cast<int>(argv.size()), argv.data(), "testapp", {}, options);
  }
  std::string error(std::vector<std::string> args) const {
    try {
      parse(std::move(args));
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli)

BOOST_AUTO_TEST_CASE(defaults_come_from_the_source_tree) {
  Fixture f;
  const CommandLine cl = f.parse({});
  BOOST_TEST(fs::equivalent(cl.config_path, f.config));
  BOOST_TEST(cl.config.get<double>("train.lr") == 0.1);
  BOOST_TEST(cl.overrides.empty());
  BOOST_TEST(!cl.help);
  BOOST_TEST(!cl.overwrite);
  BOOST_TEST(!cl.out_dir_given);
  // runs/<app>/<date-time>
  BOOST_TEST(cl.out_dir.parent_path() == fs::path("runs") / "testapp");
  BOOST_TEST(cl.out_dir.filename().string().size() >= 15u);
  BOOST_TEST(cl.args.size() == 1u);
}

BOOST_AUTO_TEST_CASE(options_and_overrides) {
  Fixture f;
  const fs::path other = f.dir.path() / "other.yaml";
  std::ofstream(other) << "seed: 5\ntrain:\n  lr: 0.5\n  steps: 10\n  layers: [3]\n";
  const CommandLine cl = f.parse({"--config", other.string(), "-Dtrain.lr=1e-3", "-D",
                                  "seed=9", "-Dtrain.layers=4,5,6", "--out",
                                  (f.dir.path() / "run1").string(), "--overwrite"});
  BOOST_TEST(cl.config_path == other);
  BOOST_TEST(cl.config.get<double>("train.lr") == 1e-3);
  BOOST_TEST(cl.config.get<int64_t>("seed") == 9);
  BOOST_TEST(cl.config.get<int64_t>("train.steps") == 10);
  BOOST_TEST(cl.config.get<std::vector<int64_t>>("train.layers") == std::vector<int64_t>({4, 5, 6}));
  BOOST_TEST(cl.overrides == std::vector<std::string>({"train.lr=1e-3", "seed=9", "train.layers=4,5,6"}));
  BOOST_TEST(cl.out_dir == f.dir.path() / "run1");
  BOOST_TEST(cl.out_dir_given);
  BOOST_TEST(cl.overwrite);

  const CommandLine eq = f.parse({"--config=" + other.string(), "--out=" + (f.dir.path() / "r").string()});
  BOOST_TEST(eq.config_path == other);
  BOOST_TEST(eq.out_dir == f.dir.path() / "r");
}

BOOST_AUTO_TEST_CASE(later_overrides_win) {
  Fixture f;
  const CommandLine cl = f.parse({"-Dseed=2", "-Dseed=3"});
  BOOST_TEST(cl.config.get<int64_t>("seed") == 3);
}

BOOST_AUTO_TEST_CASE(errors) {
  Fixture f;
  std::string msg = f.error({"--bogus"});
  BOOST_TEST(contains(msg, "--bogus"));
  BOOST_TEST(contains(msg, "unknown argument"));
  msg = f.error({"positional"});
  BOOST_TEST(contains(msg, "positional"));
  msg = f.error({"--out"});
  BOOST_TEST(contains(msg, "--out"));
  msg = f.error({"-D"});
  BOOST_TEST(contains(msg, "-D"));
  msg = f.error({"-Dseed"});
  BOOST_TEST(contains(msg, "seed"));
  BOOST_TEST(contains(msg, "'='"));
  msg = f.error({"-Dtrain.steps=1.5"});
  BOOST_TEST(contains(msg, "train.steps"));
  BOOST_TEST(contains(msg, "1.5"));
  msg = f.error({"-Dtrain.step=3"});
  BOOST_TEST(contains(msg, "train.step"));
  BOOST_TEST(contains(msg, "train.steps"));
  msg = f.error({"--config", "no/such/file.yaml"});
  BOOST_TEST(contains(msg, "no/such/file.yaml"));
  msg = f.error({"--config", f.config.string(), "--config", f.config.string()});
  BOOST_TEST(contains(msg, "twice"));
}

BOOST_AUTO_TEST_CASE(help_prints_usage_and_keys) {
  Fixture f;
  std::FILE* out = std::tmpfile();
  BOOST_REQUIRE(out != nullptr);
  f.options.help_stream = out;
  const CommandLine cl = f.parse({"-Dtrain.nope=1", "--help"});  // the bad key is not checked
  BOOST_TEST(cl.help);
  std::rewind(out);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, out)) > 0) text.append(buf, n);
  std::fclose(out);
  BOOST_TEST(contains(text, "usage: testapp"));
  BOOST_TEST(contains(text, "--config"));
  BOOST_TEST(contains(text, "-Dkey=value"));
  BOOST_TEST(contains(text, "train.lr"));
  BOOST_TEST(contains(text, "float"));
  BOOST_TEST(contains(text, "train.layers"));
  BOOST_TEST(contains(text, "[1, 2]"));
}

BOOST_AUTO_TEST_CASE(app_main_returns_status) {
  Fixture f;
  std::vector<const char*> ok{"testapp", "-Dseed=4"};
  int seen = 0;
  int rc = posgrad::apps::app_main(
      2, ok.data(), "testapp",
      [&](const CommandLine& cl) { seen = cl.config.get<int>("seed"); }, {}, f.options);
  BOOST_TEST(rc == 0);
  BOOST_TEST(seen == 4);

  rc = posgrad::apps::app_main(
      2, ok.data(), "testapp", [](const CommandLine&) { posgrad::fail("boom {}", 1); }, {},
      f.options);
  BOOST_TEST(rc == 1);

  std::vector<const char*> help{"testapp", "--help"};
  bool ran = false;
  rc = posgrad::apps::app_main(2, help.data(), "testapp", [&](const CommandLine&) { ran = true; },
                               {}, f.options);
  BOOST_TEST(rc == 0);
  BOOST_TEST(!ran);
}

BOOST_AUTO_TEST_SUITE_END()
