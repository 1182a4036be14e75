// Runs a benchmark's PyTorch twin (bench/<script>) and returns what it printed. The interpreter
// is $POSGRAD_PYTHON when set (e.g. a GPU machine whose torch lives in a virtual environment),
// else /usr/bin/python3 (Debian's python3-torch); OMP_NUM_THREADS is set to the benchmark's
// thread count so both sides use the same cores. Parsing the output is each benchmark's business.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

namespace posgrad::bench {

struct TwinRun {
  bool ok = false;      // exit status 0
  std::string output;   // stdout and stderr, interleaved
  std::string command;  // for messages
  // The last `chars` characters of the output (to show why a twin failed).
  std::string tail(size_t chars = 600) const {
    return output.size() > chars ? "..." + output.substr(output.size() - chars) : output;
  }
};

// `threads` <= 0 leaves OMP_NUM_THREADS alone.
inline TwinRun run_torch_twin(const std::string& script, const std::string& args, int threads) {
  const char* python = std::getenv("POSGRAD_PYTHON");
  TwinRun r;
  r.command = fmt::format("{}{} '{}/bench/{}' {} 2>&1",
                          threads > 0 ? fmt::format("OMP_NUM_THREADS={} ", threads) : "",
                          python && *python ? python : "/usr/bin/python3", POSGRAD_SOURCE_DIR, script, args);
  FILE* pipe = popen(r.command.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  while (fgets(buf, sizeof buf, pipe)) r.output += buf;
  r.ok = pclose(pipe) == 0;
  return r;
}

}  // namespace posgrad::bench
