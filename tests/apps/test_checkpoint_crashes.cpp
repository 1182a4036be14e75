// Crash safety of RunCheckpoints with a real process (tests/programs/checkpoint_writer, a loop
// that saves every 2nd step and writes a best-only folder every 6th):
//  - SIGKILL at seeded random moments, many times over one run folder (each trial resumes the
//    run the last one left): every step folder loads, resume picks the folder `latest` names,
//    the restored parameters and generator equal an uninterrupted run's at that step, and with
//    that folder (or the pointer) corrupted, resume falls back to the newest other folder;
//  - a file-size limit (EFBIG, what a full disk gives write()): the save fails with one error
//    line naming the file, and the previous checkpoint still loads.
// The kill test prints how many kills landed in each phase of a save.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "apps/common/run_checkpoints.h"
#include "apps/common/run_dir.h"
#include "nn/checkpoint.h"
#include "tests/programs/tiny_run.h"
#include "tests/test_support.h"

extern char** environ;

namespace fs = std::filesystem;
using posgrad::test::read_text;
using posgrad::test::TempDir;
using posgrad::test::TinyRun;

// The file's helpers and suites in a namespace of their own: in a unity batch (cmake/build_speed.cmake)
// other test files with helpers of the same names (kApp, kTiny, run, ...) come before or after it.
namespace checkpoint_crashes_tests {
using namespace posgrad;
using namespace posgrad::apps;

namespace {

const fs::path kWriter = fs::path(POSGRAD_BIN_DIR) / "checkpoint_writer";

// Starts the writer (one OpenMP thread) with stderr going to a file and stdout to `out` (a file)
// or, with `pipes`, stdin and stdout connected to pipes: pipes[0] writes to its stdin, pipes[1]
// reads its stdout. Returns its pid.
pid_t start_writer(const std::vector<std::string>& args, const fs::path& out, const fs::path& err,
                   int* pipes = nullptr) {
  std::vector<std::string> arg_strings{kWriter.string()};
  arg_strings.insert(arg_strings.end(), args.begin(), args.end());
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("OMP_NUM_THREADS=", 0) != 0) env_strings.emplace_back(*e);
  env_strings.emplace_back("OMP_NUM_THREADS=1");
  std::vector<char*> argv, envp;
  for (auto& s : arg_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  int in_fd = -1, out_fd = -1;
  if (pipes) {
    int to_child[2], from_child[2];
    BOOST_REQUIRE(::pipe2(to_child, O_CLOEXEC) == 0 && ::pipe2(from_child, O_CLOEXEC) == 0);
    in_fd = to_child[0];
    pipes[0] = to_child[1];
    pipes[1] = from_child[0];
    out_fd = from_child[1];
  } else {
    out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  BOOST_REQUIRE(out_fd >= 0 && err_fd >= 0);
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {  // only async-signal-safe calls until exec
    if (in_fd >= 0) ::dup2(in_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  if (in_fd >= 0) ::close(in_fd);
  ::close(out_fd);
  ::close(err_fd);
  return pid;
}

// Reads `fd` up to the first newline (or its end); waits at most 10 s.
std::string read_line(int fd) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  char c = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    if (::read(fd, &c, 1) != 1 || c == '\n') break;
    line += c;
  }
  return line;
}

// Runs the writer to its end; its exit code (-1 when it did not exit normally).
int run_writer(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
  const pid_t pid = start_writer(args, out, err);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The step a pointer file names; nullopt when there is no such file.
std::optional<int64_t> pointer_step(const fs::path& checkpoints, const char* pointer) {
  if (!fs::exists(checkpoints / pointer)) return std::nullopt;
  std::string name = read_text(checkpoints / pointer);
  while (!name.empty() && name.back() == '\n') name.pop_back();
  const auto step = step_of_folder_name(name);
  BOOST_TEST(step.has_value(), "pointer '" << pointer << "' holds '" << name << "'");
  return step;
}

// The steps of the folders named step-<N>, ascending.
std::vector<int64_t> step_folders(const fs::path& checkpoints) {
  std::vector<int64_t> steps;
  for (const auto& e : fs::directory_iterator(checkpoints))
    if (const auto s = step_of_folder_name(e.path().filename().string()); s && e.is_directory()) steps.push_back(*s);
  std::sort(steps.begin(), steps.end());
  return steps;
}

// Everything in checkpoints/ that is neither a step folder nor a pointer (crash leftovers).
std::vector<std::string> leftovers(const fs::path& checkpoints) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(checkpoints)) {
    const std::string name = e.path().filename().string();
    if (!step_of_folder_name(name) && name != "latest" && name != "best") names.push_back(name);
  }
  return names;
}

// Every path under `dir` with its size and modification time: what a trial changed.
using Listing = std::map<std::string, std::string>;
Listing listing(const fs::path& dir) {
  Listing out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string rel = fs::relative(e.path(), dir).string();
    out[rel] = fmt::format("{} {}", e.is_regular_file() ? static_cast<int64_t>(e.file_size()) : -1,
                           e.last_write_time().time_since_epoch().count());
  }
  return out;
}

// Where in the writer's loop the kill landed, judged from what the trial changed on disk
// (leftovers of earlier kills stay until the writer's next prune, so only changes count).
std::string kill_phase(const Listing& before, const Listing& after, std::optional<int64_t> latest,
                       std::optional<int64_t> best) {
  if (before == after) return "before its first write (restore, first steps)";
  std::set<std::string> changed;  // top-level names under which something is new or different
  for (const auto& [path, stamp] : after) {
    const auto it = before.find(path);
    if (it == before.end() || it->second != stamp) changed.insert(path.substr(0, path.find('/')));
  }
  auto ends_with = [](const std::string& s, const std::string& end) {
    return s.size() > end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
  };
  for (const std::string& name : changed)
    if (name.rfind("latest.tmp.", 0) == 0 || name.rfind("best.tmp.", 0) == 0)
      return "mid-pointer (latest or best being replaced)";
  for (const std::string& name : changed)
    if (ends_with(name, ".partial")) return "mid-write of a step folder (step-N.partial)";
  for (const std::string& name : changed)
    if (ends_with(name, ".trash")) return "mid-removal of an old step folder (step-N.trash)";
  for (const std::string& name : changed)
    if (const auto s = step_of_folder_name(name); s && *s > latest.value_or(-1) && s != best)
      return "folder complete, pointer not yet written";
  // Older folders than latest's previous one and best: pruning had not run yet.
  int64_t kept_older = 0;
  for (const auto& [path, stamp] : after)
    if (const auto s = step_of_folder_name(path); s && latest && *s < *latest && s != best) ++kept_older;
  if (kept_older > 1) return "pointer written, old folders not yet pruned";
  return "between saves (a save or best completed)";
}

// An uninterrupted TinyRun, stepped on demand, remembering each step's parameters and
// generator offset.
struct Reference {
  TinyRun run;
  int64_t step = 0;
  std::map<int64_t, std::pair<std::vector<std::vector<float>>, uint64_t>> at;
  Reference() { remember(); }
  void remember() {
    std::vector<std::vector<float>> values;
    for (const auto& [name, t] : run.model.state_dict()) values.push_back(t.to_vector<float>());
    at[step] = {values, run.gen.offset()};
  }
  const std::pair<std::vector<std::vector<float>>, uint64_t>& state(int64_t s) {
    while (step < s) {
      run.step();
      ++step;
      remember();
    }
    BOOST_REQUIRE(at.count(s));
    return at.at(s);
  }
  void forget_before(int64_t s) { at.erase(at.begin(), at.lower_bound(s)); }
};

// Restores `run_dir` into a fresh TinyRun (other initial weights) and checks the result against
// the reference at the step it restored. Returns that step.
int64_t restore_and_compare(const fs::path& run_dir, Reference& reference) {
  TinyRun fresh(12345);
  RunDir run(run_dir, ExistingRun::Append);
  RunCheckpoints checkpoints(run, fresh.model, fresh.opt, fresh.gen, {.metric = "score", .higher_is_better = true});
  const TrainingPosition at = checkpoints.restore_latest();
  const auto& [values, offset] = reference.state(at.step);
  const auto dict = fresh.model.state_dict();
  BOOST_REQUIRE_EQUAL(dict.size(), values.size());
  for (size_t i = 0; i < dict.size(); ++i)
    BOOST_TEST((dict[i].second.to_vector<float>() == values[i]), "parameter " << dict[i].first << " at step " << at.step);
  BOOST_TEST(fresh.gen.offset() == offset);
  BOOST_TEST(fresh.opt.step_count(0) == at.step);
  BOOST_TEST(at.batch_in_epoch == at.step);
  return at.step;
}

// stderr of this process, captured into a file while in scope.
class CaptureStderr {
 public:
  explicit CaptureStderr(const fs::path& file) : file_(file) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~CaptureStderr() { release(); }
  std::string text() {
    release();
    return read_text(file_);
  }

 private:
  void release() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  fs::path file_;
  int saved_ = -1;
};

void flip_byte(const fs::path& file, double where) {
  std::string bytes = read_text(file);
  BOOST_REQUIRE(!bytes.empty());
  bytes[static_cast<size_t>(where * static_cast<double>(bytes.size() - 1))] ^= 0x10;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(checkpoint_crashes)

BOOST_AUTO_TEST_CASE(sigkill_at_random_moments_never_loses_the_latest_checkpoint) {
  constexpr int kTrials = 150;
  constexpr int kMaxDelayMs = 250;  // a save takes ~40-100 ms here (about 9 fsyncs); 6 steps write 4 folders
  std::mt19937 random(20240607);
  std::uniform_int_distribution<int> delay_us(0, kMaxDelayMs * 1000);
  TempDir tmp;
  const fs::path run_dir = tmp.path() / "run", checkpoints = run_dir / "checkpoints";
  Reference reference;
  std::map<std::string, int> phases;
  int fallbacks = 0, no_fallback_possible = 0;
  int64_t last_latest = 0;
  double reap_s = 0, sleep_s = 0;
  const auto started = std::chrono::steady_clock::now();

  // One writer process serves all trials: each "go" forks a child that resumes the run and
  // writes checkpoints until it is killed (a process start costs ~0.2 s here).
  int pipes[2] = {-1, -1};
  const pid_t server = start_writer({"--serve", run_dir.string()}, {}, tmp.path() / "err.txt", pipes);
  FILE* to_server = ::fdopen(pipes[0], "w");
  pid_t pid = -1;  // the writer child of the current trial
  // Should a check stop the test half way, no writer may be left running.
  struct KillOnExit {
    pid_t server;
    const pid_t& child;
    bool armed = true;
    ~KillOnExit() {
      if (!armed) return;
      if (child > 0) ::kill(child, SIGKILL);
      ::kill(server, SIGKILL);
      ::waitpid(server, nullptr, 0);
    }
  } kill_on_exit{server, pid};
  BOOST_REQUIRE(to_server != nullptr);

  for (int trial = 0; trial < kTrials; ++trial) {
    const Listing before = listing(checkpoints);
    // Kill a writer child at a random moment after it restored the run (so that the delays fall
    // in its loop).
    std::fputs("go\n", to_server);
    std::fflush(to_server);
    pid = -1;
    std::string restored_line;
    for (int lines = 0; lines < 2; ++lines) {  // "pid P" and "restored step N", in either order
      const std::string line = read_line(pipes[1]);
      if (line.rfind("pid ", 0) == 0) pid = std::stoi(line.substr(4));
      else restored_line = line;
    }
    BOOST_REQUIRE_MESSAGE(pid > 0, "trial " << trial << ": no pid from the writer; stderr: " << read_text(tmp.path() / "err.txt"));
    BOOST_TEST(restored_line.rfind("restored step ", 0) == 0, "trial " << trial << ": " << restored_line);
    const int delay = delay_us(random);
    sleep_s += delay * 1e-6;
    std::this_thread::sleep_for(std::chrono::microseconds(delay));
    const auto kill_at = std::chrono::steady_clock::now();
    ::kill(pid, SIGKILL);
    const std::string ended = read_line(pipes[1]);  // the server reaped it: it is gone
    reap_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - kill_at).count();
    BOOST_REQUIRE_MESSAGE(ended == "ended 9", "trial " << trial << ": the writer ended by itself (" << ended
                                                       << "): " << read_text(tmp.path() / "err.txt"));
    // No kill ever forced a writer to fall back: what `latest` named loaded.
    BOOST_TEST(read_text(tmp.path() / "err.txt") == "", "trial " << trial);

    const auto latest = fs::exists(checkpoints) ? pointer_step(checkpoints, "latest") : std::nullopt;
    const auto best = fs::exists(checkpoints) ? pointer_step(checkpoints, "best") : std::nullopt;
    ++phases[kill_phase(before, listing(checkpoints), latest, best)];
    if (!latest) continue;
    BOOST_TEST(*latest >= last_latest, "trial " << trial << ": latest went back from " << last_latest);
    last_latest = *latest;

    // Every folder with a step name is a whole checkpoint, and latest's is among them.
    const std::vector<int64_t> steps = step_folders(checkpoints);
    BOOST_TEST(std::count(steps.begin(), steps.end(), *latest) == 1, "trial " << trial);
    for (int64_t s : steps) {
      try {
        BOOST_TEST(load_checkpoint(checkpoints / step_folder_name(s)).step == s);
      } catch (const Error& e) {
        BOOST_ERROR("trial " << trial << ": " << step_folder_name(s) << " does not load: " << e.what());
      }
    }
    BOOST_TEST(steps.size() <= 5u, "trial " << trial << ": " << steps.size() << " step folders");

    // Resume picks what `latest` names, bit-identical to the uninterrupted run.
    BOOST_TEST(restore_and_compare(run_dir, reference) == *latest, "trial " << trial);

    // With latest's folder (or the pointer) damaged, resume falls back to the newest other folder.
    const fs::path copy = tmp.path() / "copy";
    fs::remove_all(copy);
    fs::create_directories(copy);
    fs::copy(checkpoints, copy / "checkpoints", fs::copy_options::recursive);
    const fs::path damaged = copy / "checkpoints" / step_folder_name(*latest);
    std::string damage_names;
    int64_t expected = -1;
    switch (trial % 4) {
      case 0: flip_byte(damaged / "model.safetensors", 0.7); damage_names = "model.safetensors"; break;
      case 1: fs::resize_file(damaged / "optimizer.safetensors", fs::file_size(damaged / "optimizer.safetensors") / 2);
              damage_names = "optimizer.safetensors"; break;
      case 2: flip_byte(damaged / "state.json", 0.5); damage_names = "state.json"; break;
      case 3: std::ofstream(copy / "checkpoints" / "latest", std::ios::trunc) << "step-x\n"; damage_names = "latest"; break;
    }
    for (int64_t s : steps)
      if (trial % 4 == 3 || s != *latest) expected = std::max(expected, s);
    CaptureStderr captured(tmp.path() / "restore_err.txt");
    if (expected < 0) {
      ++no_fallback_possible;
      BOOST_CHECK_THROW(restore_and_compare(copy, reference), Error);
      continue;
    }
    const int64_t restored = restore_and_compare(copy, reference);
    const std::string said = captured.text();
    BOOST_TEST(restored == expected, "trial " << trial << ": " << said);
    BOOST_TEST(said.find(damage_names) != std::string::npos, said);
    ++fallbacks;
    reference.forget_before(std::max<int64_t>(0, *latest - 12));
  }

  pid = -1;
  std::fclose(to_server);  // the server's stdin ends: it exits
  int status = 0;
  ::waitpid(server, &status, 0);
  kill_on_exit.armed = false;
  ::close(pipes[1]);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  BOOST_TEST_MESSAGE("kill test: " << kTrials << " SIGKILLs 0.." << kMaxDelayMs << " ms after the writer restored the run (seed 20240607), "
                     << seconds << " s (" << sleep_s << " s waiting to kill, " << reap_s << " s until the killed writer was gone); run reached step " << last_latest << "; fallbacks checked " << fallbacks
                     << " (none possible " << no_fallback_possible << ")");
  int total = 0;
  for (const auto& [phase, count] : phases) {
    BOOST_TEST_MESSAGE("  " << count << "  " << phase);
    total += count;
  }
  BOOST_TEST(total == kTrials);
  BOOST_TEST(last_latest > 0);
  // The kills must have hit the interesting moments, not only the gaps between saves.
  BOOST_TEST(phases["mid-write of a step folder (step-N.partial)"] >= 10);
  BOOST_TEST(phases["mid-pointer (latest or best being replaced)"] >= 1);
}

BOOST_AUTO_TEST_CASE(a_full_disk_fails_the_save_with_one_error_and_keeps_the_previous_checkpoint) {
  // model.safetensors is ~17 KB and optimizer.safetensors ~33 KB: limits that stop each.
  const std::vector<std::pair<int, std::string>> limits{{8192, "model.safetensors"}, {24576, "optimizer.safetensors"}};
  for (const auto& [limit, file] : limits) {
    TempDir tmp;
    const fs::path run_dir = tmp.path() / "run", checkpoints = run_dir / "checkpoints";
    const fs::path out = tmp.path() / "out.txt", err = tmp.path() / "err.txt";
    BOOST_REQUIRE_EQUAL(run_writer({run_dir.string(), "4"}, out, err), 0);
    BOOST_REQUIRE(pointer_step(checkpoints, "latest").value_or(-1) == 4);

    // Steps 5 and 6 under the limit: the save of step 6 fails.
    BOOST_TEST(run_writer({run_dir.string(), "6", std::to_string(limit)}, out, err) == 1);
    const std::string error = read_text(err);
    BOOST_TEST_MESSAGE("RLIMIT_FSIZE " << limit << ": " << error);
    BOOST_TEST(std::count(error.begin(), error.end(), '\n') == 1, error);
    BOOST_TEST(error.rfind("error: cannot save the checkpoint of step 6", 0) == 0, error);
    BOOST_TEST(error.find(file) != std::string::npos, error);
    BOOST_TEST(error.find("File too large") != std::string::npos, error);
    BOOST_TEST(read_text(out) == "restored step 4\n");

    // Nothing changed: latest still names step 4, no half-written folder or temporary is left,
    // and step 4 restores bit-identically.
    BOOST_TEST(pointer_step(checkpoints, "latest").value_or(-1) == 4);
    BOOST_TEST(pointer_step(checkpoints, "best").value_or(-1) == 3);
    BOOST_TEST(step_folders(checkpoints) == std::vector<int64_t>({2, 3, 4}));
    BOOST_TEST(leftovers(checkpoints).empty());
    Reference reference;
    BOOST_TEST(restore_and_compare(run_dir, reference) == 4);

    // Without the limit the run continues from there.
    BOOST_REQUIRE_EQUAL(run_writer({run_dir.string(), "8"}, out, err), 0);
    BOOST_TEST(read_text(out) == "restored step 4\n");
    BOOST_TEST(restore_and_compare(run_dir, reference) == 8);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace checkpoint_crashes_tests
