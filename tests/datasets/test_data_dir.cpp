// The data folder lookup: explicit folder, POSGRAD_DATA_DIR, POSGRAD_DATA_SEARCH=off, and the
// error that lists where it looked. The environment variables are restored after each case.
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <optional>

#include "datasets/data_dir.h"
#include "test_util.h"

using namespace posgrad;
using posgrad::test::expect_error;
using posgrad::test::TempDir;

namespace {
// Saves POSGRAD_DATA_DIR and POSGRAD_DATA_SEARCH, clears the search switch (each case sets what
// it tests), and restores both.
struct EnvGuard {
  std::optional<std::string> saved_dir, saved_search;
  EnvGuard() {
    if (const char* v = std::getenv(kDataDirEnv)) saved_dir = v;
    if (const char* v = std::getenv(kDataSearchEnv)) saved_search = v;
    ::unsetenv(kDataSearchEnv);
  }
  ~EnvGuard() {
    restore(kDataDirEnv, saved_dir);
    restore(kDataSearchEnv, saved_search);
  }
  static void restore(const char* name, const std::optional<std::string>& value) {
    if (value) ::setenv(name, value->c_str(), 1);
    else ::unsetenv(name);
  }
};

// A repository checkout with its data beside it, <root>/project and <root>/shared/data, and the
// current folder inside the project for as long as this lives.
struct InProjectBesideData {
  TempDir root;
  std::filesystem::path old = std::filesystem::current_path();
  InProjectBesideData() {
    std::filesystem::create_directories(root / "shared" / "data");
    std::filesystem::create_directories(root / "project");
    std::filesystem::current_path(root / "project");
  }
  ~InProjectBesideData() { leave(); }
  // Back to the folder the test started in (the folders stay until this is destroyed).
  void leave() { std::filesystem::current_path(old); }
  std::filesystem::path data() const { return root / "shared" / "data"; }
};
}  // namespace

BOOST_AUTO_TEST_SUITE(data_dir)

BOOST_AUTO_TEST_CASE(explicit_and_environment_override) {
  EnvGuard guard;
  TempDir a, b;
  ::setenv(kDataDirEnv, a.path().c_str(), 1);
  BOOST_TEST(std::filesystem::equivalent(find_data_dir(), a.path()));
  BOOST_TEST(std::filesystem::equivalent(find_data_dir(b.path().string()), b.path()));  // config wins
  ::setenv(kDataDirEnv, (a.path() / "missing").c_str(), 1);
  expect_error([] { find_data_dir(); }, {"POSGRAD_DATA_DIR", "missing", "no such directory"});
  expect_error([&] { find_data_dir((b.path() / "nowhere").string()); }, {"nowhere", "no such directory"});
}

BOOST_AUTO_TEST_CASE(automatic_lookup_and_error_message) {
  EnvGuard guard;
  ::unsetenv(kDataDirEnv);
  const auto candidates = data_dir_candidates();
  BOOST_TEST(!candidates.empty());
  for (const auto& c : candidates) BOOST_TEST_MESSAGE("data folder candidate: " << c.string());
  const auto found = try_find_data_dir();
  if (found) {
    BOOST_TEST_MESSAGE("found data folder " << found->string());
    BOOST_TEST(std::filesystem::is_directory(*found));
    return;
  }
  expect_error([] { find_data_dir(); }, {"data folder not found", "looked in", candidates[0].string(), "POSGRAD_DATA_DIR"});
}

BOOST_AUTO_TEST_CASE(relative_to_current_directory) {
  EnvGuard guard;
  ::unsetenv(kDataDirEnv);
  InProjectBesideData project;
  const auto found = try_find_data_dir();
  project.leave();
  BOOST_REQUIRE(found.has_value());
  BOOST_TEST(std::filesystem::equivalent(*found, project.data()));
}

// The command the apps print when data is missing: the posgrad-data built beside this program,
// and the folder the lookup would use.
BOOST_AUTO_TEST_CASE(fetch_command_names_the_program_and_the_folder) {
  EnvGuard guard;
  ::unsetenv(kDataDirEnv);
  const std::string given = fetch_command("cifar10", "/some/where");
  const std::string suffix = " fetch cifar10 --dir /some/where";
  BOOST_REQUIRE(given.size() > suffix.size());
  BOOST_TEST(given.substr(given.size() - suffix.size()) == suffix);
  const std::filesystem::path program = given.substr(0, given.size() - suffix.size());
  BOOST_TEST(program.filename() == "posgrad-data");
  BOOST_TEST(std::filesystem::exists(program), program << " is the program beside test_datasets");
  ::setenv(kDataDirEnv, "/from/env", 1);
  BOOST_TEST(fetch_command("mnist").find(" fetch mnist --dir /from/env") != std::string::npos);
  BOOST_TEST(fetch_command("mnist", "/given").find(" --dir /given") != std::string::npos);  // configured wins
}

// A dataset file that posgrad-data fetches and that is missing: the error names the command.
BOOST_AUTO_TEST_CASE(find_data_file_names_the_fetch_command) {
  EnvGuard guard;
  ::unsetenv(kDataDirEnv);
  TempDir data;
  const std::filesystem::path corpus = std::filesystem::path("tinyshakespeare") / "input.txt";
  expect_error([&] { find_data_file(corpus, data.path().string()); },
               {(data.path() / corpus).string() + ": file not found",
                "posgrad-data fetch tinyshakespeare --dir " + data.path().string()});
  expect_error([&] { find_data_file(corpus, (data.path() / "nowhere").string()); },
               {"nowhere", "no such directory", "posgrad-data fetch tinyshakespeare --dir " + (data.path() / "nowhere").string()});
  std::filesystem::create_directories(data.path() / "tinyshakespeare");
  test::write_text(data.path() / corpus, "text");
  BOOST_TEST(find_data_file(corpus, data.path().string()) == data.path() / corpus);
  // Not a dataset posgrad-data knows: returned as it is, for its reader to report.
  BOOST_TEST(find_data_file("enwik8/enwik8", data.path().string()) == data.path() / "enwik8" / "enwik8");
}

BOOST_AUTO_TEST_CASE(search_off_hides_the_folder_beside_the_repository) {
  EnvGuard guard;
  ::unsetenv(kDataDirEnv);
  InProjectBesideData project;
  ::setenv(kDataSearchEnv, "off", 1);
  const auto hidden = try_find_data_dir();
  const auto candidates = data_dir_candidates();
  std::string message;
  try {
    find_data_dir();
  } catch (const Error& e) {
    message = e.what();
  }
  ::setenv(kDataSearchEnv, "on", 1);
  const auto shown = try_find_data_dir();
  project.leave();
  BOOST_TEST(!hidden.has_value());
  BOOST_TEST(candidates.empty());
  BOOST_TEST(message.find("data folder not found") != std::string::npos, message);
  BOOST_TEST(message.find("POSGRAD_DATA_SEARCH=off") != std::string::npos, message);
  BOOST_REQUIRE(shown.has_value());
  BOOST_TEST(std::filesystem::equivalent(*shown, project.data()));

  // An explicit folder is still used; a misspelt switch is an error, not a silent search.
  TempDir explicit_dir;
  ::setenv(kDataSearchEnv, "off", 1);
  ::setenv(kDataDirEnv, explicit_dir.path().c_str(), 1);
  BOOST_TEST(std::filesystem::equivalent(find_data_dir(), explicit_dir.path()));
  ::unsetenv(kDataDirEnv);
  ::setenv(kDataSearchEnv, "no", 1);
  expect_error([] { try_find_data_dir(); }, {"POSGRAD_DATA_SEARCH=no", "expected on or off"});
}

BOOST_AUTO_TEST_SUITE_END()
