// Helpers shared by the test suites: a temporary folder removed at scope exit (TempDir), checks
// that a callable throws a posgrad::Error whose message holds given text (throws_with,
// check_error), and reading a whole file into a string (read_text).
#pragma once

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "tensor/error.h"

namespace posgrad::test {

// A fresh, empty folder under the system temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("posgrad_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// True when f throws a posgrad::Error whose message contains needle.
inline bool throws_with(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
  } catch (const Error& e) {
    return std::string(e.what()).find(needle) != std::string::npos;
  }
  return false;
}

// Runs f, which must throw posgrad::Error whose message contains every one of `parts`.
template <typename F>
void check_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const Error& e) {
    const std::string m = e.what();
    for (const auto& p : parts) BOOST_TEST(m.find(p) != std::string::npos, "message \"" << m << "\" lacks \"" << p << "\"");
    return;
  }
  BOOST_FAIL("expected a posgrad::Error");
}

// The whole contents of a file ("" when it cannot be opened).
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace posgrad::test
