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
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "apps/common/run_checkpoints.h"
#include "apps/common/run_dir.h"
#include "nn/checkpoint.h"
#include "tests/programs/tiny_run.h"
#include "tests/test_support.h"

extern char** environ;

namespace fs = std::filesystem;
using namespace posgrad;
using namespace posgrad::apps;
using posgrad::test::read_text;
using posgrad::test::TempDir;
using posgrad::test::TinyRun;

namespace {

const fs::path kWriter = fs::path(POSGRAD_BIN_DIR) / "checkpoint_writer";

// Starts the writer (one OpenMP thread) with stdout and stderr going to files; returns its pid.
pid_t start_writer(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
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
  const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  BOOST_REQUIRE(out_fd >= 0 && err_fd >= 0);
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {  // only async-signal-safe calls until exec
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(err_fd);
  return pid;
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

// Where in the writer's loop the kill landed, judged from what it left on disk.
std::string kill_phase(const fs::path& checkpoints, std::optional<int64_t> latest, std::optional<int64_t> best) {
  bool pointer_tmp = false, partial = false, trash = false;
  for (const std::string& name : leftovers(checkpoints)) {
    pointer_tmp |= name.rfind("latest.tmp.", 0) == 0 || name.rfind("best.tmp.", 0) == 0;
    partial |= name.size() > 8 && name.compare(name.size() - 8, 8, ".partial") == 0;
    trash |= name.size() > 6 && name.compare(name.size() - 6, 6, ".trash") == 0;
  }
  if (pointer_tmp) return "mid-pointer (latest or best being replaced)";
  if (partial) return "mid-write of a step folder (step-N.partial)";
  if (trash) return "mid-removal of an old step folder (step-N.trash)";
  const std::vector<int64_t> steps = step_folders(checkpoints);
  for (int64_t s : steps)
    if (s > latest.value_or(-1) && s != best) return "folder complete, pointer not yet written";
  if (!latest) return "before the first checkpoint";
  // Older folders than latest's previous one and best: pruning had not run yet.
  int64_t kept_older = 0;
  for (int64_t s : steps) kept_older += s < *latest && s != best;
  if (kept_older > 1) return "pointer written, old folders not yet pruned";
  return "between saves (training, startup or restore)";
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
  constexpr int kTrials = 120;
  constexpr int kMaxDelayMs = 250;  // a save takes ~40-100 ms (about 9 fsyncs), a 6-step cycle 4 saves
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

  for (int trial = 0; trial < kTrials; ++trial) {
    // Kill the writer at a random moment.
    const pid_t pid = start_writer({run_dir.string()}, tmp.path() / "out.txt", tmp.path() / "err.txt");
    const int delay = delay_us(random);
    sleep_s += delay * 1e-6;
    std::this_thread::sleep_for(std::chrono::microseconds(delay));
    const auto kill_at = std::chrono::steady_clock::now();
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    const auto reaped = std::chrono::steady_clock::now();
    reap_s += std::chrono::duration<double>(reaped - kill_at).count();
    BOOST_REQUIRE_MESSAGE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                          "trial " << trial << ": the writer ended by itself: " << read_text(tmp.path() / "err.txt"));
    // The previous kill never forced the writer to fall back: what `latest` named loaded.
    BOOST_TEST(read_text(tmp.path() / "err.txt") == "", "trial " << trial);

    const auto latest = fs::exists(checkpoints) ? pointer_step(checkpoints, "latest") : std::nullopt;
    const auto best = fs::exists(checkpoints) ? pointer_step(checkpoints, "best") : std::nullopt;
    ++phases[fs::exists(checkpoints) ? kill_phase(checkpoints, latest, best) : "before the first checkpoint"];
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

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  BOOST_TEST_MESSAGE("kill test: " << kTrials << " SIGKILLs after 0.." << kMaxDelayMs << " ms (seed 20240607), "
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
