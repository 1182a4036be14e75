// Helpers shared by the fuzz harnesses (tests/fuzz/fuzz_*.cpp): a scratch folder for parsers that
// read files, byte writers (raw and gzip), splitting one input into several files, and the rule
// every harness follows about exceptions:
//   posgrad::Error is the expected outcome of bad input and is caught (expect_error_or_success);
//   any other exception escapes LLVMFuzzerTestOneInput, which libFuzzer (and the replay driver)
//   reports as a finding: the parsers promise to turn every bad input into a posgrad::Error
//   naming the problem, so a std::bad_alloc, std::out_of_range, nlohmann or YAML exception
//   leaking out means some input was not validated.
// A harness that checks a property (a round trip) calls fuzz_finding(), which aborts with a
// message: libFuzzer saves the input as a crash.
//
// Deliberately not here: any parsing (each harness drives the real parser), libFuzzer itself
// (the harnesses link against it in the clang build, against replay_main.cpp in the g++ build).
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/error.h"
#include "tensor/tensor.h"

namespace posgrad::fuzz {

// Reports a broken property of a parser: prints `what` and aborts (libFuzzer keeps the input).
[[noreturn]] inline void fuzz_finding(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::abort();
}

// Runs `body`; a posgrad::Error is the parser rejecting the input and is swallowed. Returns true
// when `body` finished without one. With POSGRAD_FUZZ_VERBOSE=1 in the environment it prints
// "accepted" or the Error's message (to see what a corpus file exercises).
template <typename Body>
bool expect_error_or_success(Body&& body) {
  static const bool verbose = std::getenv("POSGRAD_FUZZ_VERBOSE") != nullptr;
  try {
    body();
    if (verbose) std::fprintf(stderr, "accepted\n");
    return true;
  } catch (const posgrad::Error& e) {
    if (verbose) std::fprintf(stderr, "rejected: %s\n", e.what());
    return false;
  }
}

// One scratch folder per process, on tmpfs when there is one (/dev/shm: the file-reading
// harnesses write every input, disk writes would dominate), removed at normal exit.
inline void remove_scratch_dir();

inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path base = std::filesystem::temp_directory_path();
    std::error_code ec;
    if (std::filesystem::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK) == 0) base = "/dev/shm";
    const std::filesystem::path made = base / ("posgrad-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(made);
    return made;
  }();
  // Registered after `dir` is complete, so it runs before `dir` is destroyed.
  static const bool registered = (std::atexit(remove_scratch_dir), true);
  (void)registered;
  return dir;
}

inline void remove_scratch_dir() {
  std::error_code ignored;
  std::filesystem::remove_all(scratch_dir(), ignored);
}

// An empty folder under scratch_dir() (emptied on every call: one input at a time).
inline std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path dir = scratch_dir() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) fuzz_finding("harness: cannot write " + path.string());
}

// Writes `bytes` gzip-compressed (what the dataset loaders accept besides plain files).
inline void write_gzip_file(const std::filesystem::path& path, std::string_view bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr) fuzz_finding("harness: cannot open " + path.string() + " for gzip");
  if (!bytes.empty() && gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) != static_cast<int>(bytes.size()))
    fuzz_finding("harness: gzwrite failed for " + path.string());
  if (gzclose(f) != Z_OK) fuzz_finding("harness: gzclose failed for " + path.string());
}

// The separator between the files packed into one fuzz input (checkpoint, CIFAR-10); it is in
// the harnesses' dictionary (tests/fuzz/dict/) so the mutator can add and remove files.
inline constexpr std::string_view kFileSeparator = "--posgrad-file--";

// Splits `input` at every kFileSeparator: "a--posgrad-file--b" -> {"a", "b"}.
inline std::vector<std::string_view> split_files(std::string_view input) {
  std::vector<std::string_view> parts;
  while (true) {
    const size_t at = input.find(kFileSeparator);
    parts.push_back(input.substr(0, at));
    if (at == std::string_view::npos) return parts;
    input.remove_prefix(at + kFileSeparator.size());
  }
}

// Aborts (a finding) unless every size of `t` is non-negative and the product of its sizes,
// zeros counted as 1, fits in int64: otherwise its strides overflowed when it was made. Checked
// here as well as by UBSan so that the ordinary (unsanitized) replay catches a regression too.
inline void check_representable(const posgrad::Tensor& t, const std::string& what) {
  int64_t extent = 1;
  for (int64_t size : t.shape())
    if (size < 0 || __builtin_mul_overflow(extent, size > 0 ? size : 1, &extent))
      fuzz_finding(what + ": the parser returned a tensor whose shape overflows int64: " + t.describe());
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace posgrad::fuzz
