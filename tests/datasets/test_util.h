// Helpers shared by the datasets tests: a temporary folder removed at scope exit, file writers
// (raw and gzip), an Error-message checker, and a precondition that skips real-data cases
// cleanly (reported as skipped, with the reason) when the shared data folder is absent.
#pragma once

#include <zlib.h>

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "datasets/data_dir.h"
#include "tensor/error.h"

namespace posgrad::test {

class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("posgrad_datasets_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
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

inline void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  BOOST_REQUIRE(out.good());
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

inline void write_gzip(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  BOOST_REQUIRE(f != nullptr);
  if (!bytes.empty())
    BOOST_REQUIRE_EQUAL(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
                        static_cast<int>(bytes.size()));
  BOOST_REQUIRE_EQUAL(gzclose(f), Z_OK);
}

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Runs fn, requires a posgrad::Error, and checks that its message holds every `needle`.
template <typename Fn>
void check_error(Fn&& fn, const std::vector<std::string>& needles) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string message = e.what();
    BOOST_TEST_MESSAGE("error as expected: " << message);
    for (const auto& needle : needles)
      BOOST_TEST(message.find(needle) != std::string::npos,
                 "message \"" << message << "\" should contain \"" << needle << "\"");
    return;
  }
  BOOST_ERROR("expected a posgrad::Error containing \"" << (needles.empty() ? "" : needles[0]) << "\"");
}

// precondition(data_present("mnist")): skips the case, with the reason, when the data is absent.
struct data_present {
  std::string sub;
  explicit data_present(std::string s) : sub(std::move(s)) {}
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    std::optional<std::filesystem::path> dir;
    try {
      dir = try_find_data_dir();
    } catch (const Error& e) {
      boost::test_tools::assertion_result r(false);
      r.message() << e.what();
      return r;
    }
    if (!dir || !std::filesystem::is_directory(*dir / sub)) {
      boost::test_tools::assertion_result r(false);
      r.message() << "skipped: real data folder '" << sub << "' not found (set " << kDataDirEnv << ")";
      return r;
    }
    return true;
  }
};

inline std::filesystem::path data_dir() { return find_data_dir(); }

}  // namespace posgrad::test
