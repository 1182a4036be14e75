// Helpers shared by the datasets tests, on top of tests/test_support.h (which gives TempDir):
// file writers (raw and gzip), an Error-message checker that logs and does not stop the case,
// and a precondition that skips real-data cases cleanly (reported as skipped, with the reason)
// when the shared data folder is absent.
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
#include "tests/data_present.h"  // data_present, for the real-data cases
#include "tests/test_support.h"

namespace posgrad::test {

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
void expect_error(Fn&& fn, const std::vector<std::string>& needles) {
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

inline std::filesystem::path data_dir() { return find_data_dir(); }

}  // namespace posgrad::test
