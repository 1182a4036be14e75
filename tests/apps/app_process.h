// Helpers for the end-to-end app tests (test_count24_app, test_posattn_app, test_charlm_app): run
// a built app executable with its output in a log file (to its end, or started in the background
// as a child process), read a run folder's metrics without the wall-clock fields, and read which
// checkpoint the `latest` pointer names.
// Deliberately not here: anything app-specific (settings, expected metrics) — each test says that.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

namespace posgrad::test {

// Runs `env app args > log 2>&1` through the shell; the exit status, or -1 when it did not exit
// normally (a signal). `env` is a prefix such as "OMP_NUM_THREADS=1 " (with its trailing space).
inline int run_app(const std::filesystem::path& app, const std::string& args, const std::filesystem::path& log,
                   const std::string& env = "") {
  const std::string cmd = env + app.string() + " " + args + " > " + log.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Starts `env app args > log 2>&1` as a child process and returns at once: its pid, which is the
// app's own (the shell execs env(1), which execs the app). The caller waits for it (waitpid) or kills it.
inline pid_t start_app(const std::filesystem::path& app, const std::string& args, const std::filesystem::path& log,
                       const std::string& env = "") {
  const std::string cmd = "exec env " + env + app.string() + " " + args + " > " + log.string() + " 2>&1";
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// The records of run_dir/metrics.jsonl with the named fields (wall-clock times) erased: what must
// repeat exactly between an interrupted and an uninterrupted run.
inline std::vector<nlohmann::json> metrics_without(const std::filesystem::path& run_dir,
                                                   std::initializer_list<const char*> fields) {
  std::ifstream in(run_dir / "metrics.jsonl");
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    for (const char* field : fields) j.erase(field);
    records.push_back(j);
  }
  return records;
}

// The step the run's `latest` checkpoint pointer names (-1 when there is none yet).
inline int64_t latest_checkpoint_step(const std::filesystem::path& run_dir) {
  std::ifstream in(run_dir / "checkpoints" / "latest");
  std::string name;
  if (!(in >> name) || name.rfind("step-", 0) != 0) return -1;
  return std::stoll(name.substr(5));
}

}  // namespace posgrad::test
