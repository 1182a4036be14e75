// The driver that replays fuzz inputs without libFuzzer (the ordinary g++ build, CTest case
// fuzz_replay_<name>): calls the harness's LLVMFuzzerTestOneInput once per file under every
// folder (or file) named on the command line, in sorted order, and prints how many it ran.
// A finding shows as it would under libFuzzer minus the sanitizers: an exception other than
// posgrad::Error escapes (std::terminate), a property check aborts, or the process crashes.
// A named path that does not exist is skipped with a note (a harness without crash inputs has no
// crashes/<name>/ folder); exits non-zero when no input was found at all (a replay that ran
// nothing would pass for the wrong reason).
//
// Deliberately not here: mutation, coverage, sanitizers (scripts/fuzz.sh replay runs the same
// inputs through the sanitizer-built harnesses).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  size_t total = 0;
  for (int a = 1; a < argc; ++a) {
    const fs::path root = argv[a];
    std::vector<fs::path> files;
    if (fs::is_regular_file(root)) {
      files.push_back(root);
    } else if (fs::is_directory(root)) {
      for (const auto& entry : fs::recursive_directory_iterator(root))
        if (entry.is_regular_file()) files.push_back(entry.path());
    } else {
      std::printf("replay: no '%s' (nothing to replay there)\n", root.c_str());
      continue;
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      std::ifstream in(file, std::ios::binary);
      const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      if (!in.eof() && in.fail()) {
        std::fprintf(stderr, "replay: cannot read '%s'\n", file.c_str());
        return 2;
      }
      std::fprintf(stderr, "replay: %s (%zu bytes)\n", file.c_str(), bytes.size());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    }
    std::printf("replay: %zu inputs from %s\n", files.size(), root.c_str());
    total += files.size();
  }
  if (total == 0) {
    std::fprintf(stderr, "replay: no inputs found\n");
    return 2;
  }
  return 0;
}
