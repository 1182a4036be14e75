// Settings and options the apps refuse, end to end through the built executables: every float
// setting of every app (count24, posattn, charlm), as each app's --help lists them, refuses nan,
// inf and -inf with one error line naming the setting, before any run folder is made; charlm
// sample's number options refuse them too, and an out-of-range option says its bound in a few
// characters (CLI11's own ranges printed numeric_limits<double>::max in full); charlm refuses
// data fractions that add up to more than the file.
// Deliberately not here: the rules of one setting (test_settings.cpp) or any training.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/apps/app_process.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::read_text;
using posgrad::test::TempDir;

namespace {

// The keys of the float settings (and float-list settings) in `app --help`: the lines after
// "Settings (...):" are "  key  type  default  help".
std::vector<std::string> float_settings(const std::string& app, const fs::path& log) {
  const int rc = posgrad::test::run_app(fs::path(POSGRAD_BIN_DIR) / app, "--help", log);
  BOOST_REQUIRE_MESSAGE(rc == 0, app << " --help failed:\n" << read_text(log));
  std::istringstream help(read_text(log));
  std::vector<std::string> keys;
  bool in_settings = false;
  for (std::string line; std::getline(help, line);) {
    if (line.rfind("Settings (", 0) == 0) {
      in_settings = true;
      continue;
    }
    if (!in_settings) continue;
    std::istringstream words(line);
    std::string key, type, of, element;
    words >> key >> type;
    if (type == "list") words >> of >> element;
    if (type == "float" || (type == "list" && element == "float")) keys.push_back(key);
  }
  return keys;
}

// The log's lines that hold any text.
std::vector<std::string> lines_of(const fs::path& log) {
  std::istringstream text(read_text(log));
  std::vector<std::string> lines;
  for (std::string line; std::getline(text, line);)
    if (line.find_first_not_of(" \t") != std::string::npos) lines.push_back(line);
  return lines;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(app_settings_checks)

BOOST_AUTO_TEST_CASE(every_float_setting_of_every_app_refuses_nan_and_infinity) {
  TempDir tmp;
  // Per app: one float setting its --help must list (so the listing was read, not an empty list
  // walked), and quick settings given before the one under test (the later -D wins), so that a
  // value wrongly accepted makes a short run that fails the checks, not a long one.
  const struct {
    const char *app, *known, *quick;
  } apps[] = {
      {"count24", "train.lr", "-Dtrain.steps=1 -Ddata.train_size=16 -Ddata.test_size=16 -Dtrain.batch_size=8"},
      {"posattn", "model.sigma", "-Ddata.small_dataset=64 -Dtrain.max_steps=1 -Dmodel.layers=1"},
      {"charlm", "model.span_ramp",
       "-Dmodel.layers=1 -Dmodel.width=8 -Dmodel.heads=1 -Dmodel.ff_width=8 -Dmodel.max_span=8 -Dmodel.span_ramp=4 "
       "-Dmodel.trim_granularity=4 -Dmodel.cache_margin=4 -Dtrain.batch_size=2 -Dtrain.segment=8 -Dtrain.steps=1 "
       "-Deval.batch=1"},
  };
  int checked = 0;
  for (const auto& [app, known, quick] : apps) {
    const std::vector<std::string> keys = float_settings(app, tmp / "help.txt");
    BOOST_TEST_MESSAGE(app << ": " << keys.size() << " float settings");
    BOOST_TEST((std::find(keys.begin(), keys.end(), known) != keys.end()), app << " --help lists " << known);
    for (const std::string& key : keys)
      for (const char* value : {"nan", "inf", "-inf"}) {
        const std::string what = fmt::format("{} -D{}={}", app, key, value);
        const fs::path out = tmp / "run", log = tmp / "log.txt";
        const int rc = posgrad::test::run_app(fs::path(POSGRAD_BIN_DIR) / app,
                                              fmt::format("train {} -D{}={} --out {}", quick, key, value, out.string()),
                                              log, "OMP_NUM_THREADS=1 timeout 120 ");
        const bool made_run_folder = fs::exists(out);
        fs::remove_all(out);  // a value wrongly accepted made a run: the next one starts clean
        const std::vector<std::string> lines = lines_of(log);
        BOOST_TEST(rc == 1, what << " exited with " << rc << ":\n" << read_text(log));
        BOOST_TEST(lines.size() == 1u, what << " printed " << lines.size() << " lines:\n" << read_text(log));
        const std::string first = lines.empty() ? "" : lines.front();
        BOOST_TEST(first.find(fmt::format("{}: error: ", app)) == 0u, what << ": " << first);
        BOOST_TEST(first.find("'" + key + "'") != std::string::npos, what << ": " << first);
        BOOST_TEST(first.find(std::string(value) == "nan" ? "nan is not a number" : "inf is not a finite number") !=
                       std::string::npos,
                   what << ": " << first);
        BOOST_TEST(!made_run_folder, what << " created the run folder");
        ++checked;
      }
  }
  BOOST_TEST(checked >= 3 * 3);
}

BOOST_AUTO_TEST_CASE(charlm_sample_number_options_refuse_nan_infinity_and_say_their_bound) {
  TempDir tmp;
  const fs::path log = tmp / "log.txt";
  // The options are checked before the run folder is read: this one does not exist.
  const std::string sample = fmt::format("sample --checkpoint {} ", (tmp / "no_run").string());
  const struct {
    std::string args, expected;
  } cases[] = {
      {"--temperature nan", "--temperature: nan is not a number"},
      {"--temperature inf", "--temperature: inf is not a finite number; must be > 0"},
      {"--temperature 0", "--temperature: 0 is out of range: must be > 0"},
      {"--temperature -1e-300", "--temperature: -1e-300 is out of range: must be > 0"},
      {"--tokens -1", "--tokens: -1 is out of range: must be >= 0"},
      {"--top-k -3", "--top-k: -3 is out of range: must be >= 0"},
  };
  for (const auto& c : cases) {
    const int rc = posgrad::test::run_app(fs::path(POSGRAD_BIN_DIR) / "charlm", sample + c.args, log);
    const std::vector<std::string> lines = lines_of(log);
    BOOST_TEST(rc == 2, c.args << " exited with " << rc << ":\n" << read_text(log));
    BOOST_REQUIRE_MESSAGE(!lines.empty(), c.args << " printed nothing");
    BOOST_TEST(lines.front().find(c.expected) != std::string::npos, c.args << ": " << lines.front());
    BOOST_TEST(lines.front().size() < 160u, c.args << ": " << lines.front());
  }
}

// Validation is data.val_fraction of the file after the first data.train_fraction: 0.9 + 0.5 asks
// for more than the file (it was silently cut to the last 10%).
BOOST_AUTO_TEST_CASE(charlm_refuses_fractions_that_add_up_to_more_than_the_file) {
  TempDir tmp;
  const fs::path data = tmp / "text.txt", out = tmp / "run", log = tmp / "log.txt";
  {
    std::ofstream text(data);
    for (int i = 0; i < 200; ++i) text << "the quick brown fox jumps over the lazy dog\n";
  }
  const std::string tiny = "-Dmodel.layers=1 -Dmodel.width=8 -Dmodel.heads=1 -Dmodel.ff_width=8 -Dmodel.max_span=8 "
                           "-Dmodel.span_ramp=4 -Dmodel.trim_granularity=4 -Dmodel.cache_margin=4 -Dtrain.batch_size=2 "
                           "-Dtrain.segment=8 -Dtrain.steps=1 -Deval.batch=1 -Dtrain.warmup=0 -Ddata.path=" +
                           data.string();
  const int rc = posgrad::test::run_app(fs::path(POSGRAD_BIN_DIR) / "charlm",
                                        "train " + tiny + " -Ddata.train_fraction=0.9 -Ddata.val_fraction=0.5 --out " +
                                            out.string(),
                                        log, "OMP_NUM_THREADS=1 ");
  const std::vector<std::string> lines = lines_of(log);
  BOOST_TEST(rc == 1, "exited with " << rc << ":\n" << read_text(log));
  BOOST_REQUIRE_EQUAL(lines.size(), 1u);
  for (const char* part : {"charlm: error: ", "data.train_fraction (0.9)", "data.val_fraction (0.5)", "1.4"})
    BOOST_TEST(lines.front().find(part) != std::string::npos, part << " in: " << lines.front());
  BOOST_TEST(!fs::exists(out));
  // Fractions that fill the file exactly are fine (0.7 + 0.3 is 1 in floating point too).
  const int ok = posgrad::test::run_app(fs::path(POSGRAD_BIN_DIR) / "charlm",
                                        "train " + tiny + " -Ddata.train_fraction=0.7 -Ddata.val_fraction=0.3 --out " +
                                            out.string(),
                                        log, "OMP_NUM_THREADS=1 ");
  BOOST_TEST(ok == 0, read_text(log));
}

BOOST_AUTO_TEST_SUITE_END()
