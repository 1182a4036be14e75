// RunCheckpoints and the finite guard: latest and best pointers, pruning to latest, the previous
// checkpoint and best, a restore that continues bit for bit (same losses as an uninterrupted
// run), a restore that falls back to the newest folder that loads when latest does not (saying
// so on stderr), a corrupt pointer named in the error with its content escaped, the one pointer
// reader of eval/sample/figures refusing a pointer out of the run, and NaN/Inf stops that name the step and
// the parameter. (Crashes of a real process: test_checkpoint_crashes.cpp.)
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "apps/common/finite_guard.h"
#include "apps/common/run_checkpoints.h"
#include "apps/common/run_dir.h"
#include "nn/nn.h"
#include "posgrad.h"
#include "tests/test_support.h"

#include <csignal>
#include <functional>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace posgrad;
using namespace posgrad::apps;
using posgrad::test::check_error;
using posgrad::test::read_text;
using posgrad::test::TempDir;

namespace {

// A tiny regression problem whose every step draws from the generator (so its state matters).
struct Trainer {
  Generator gen{3};
  Linear model{4, 2, gen};
  Adam opt{model.parameters(), AdamOptions{.lr = 0.05}};
  double step() {
    const Tensor x = normal({8, 4}, 0, 1, gen);
    const Tensor y = normal({8, 2}, 0, 1, gen);
    Variable loss = mse_loss(model.forward(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    return loss.item();
  }
};

std::vector<std::string> step_folders(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory()) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// What this process writes to stderr while `f` runs.
template <typename F>
std::string stderr_of(F&& f, const fs::path& scratch) {
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int fd = ::open(scratch.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ::dup2(fd, 2);
  ::close(fd);
  try {
    f();
  } catch (...) {
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    throw;
  }
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  return read_text(scratch);
}

// A run with checkpoints at steps 2, 4 and 6 (losses of every step in `losses`).
void three_checkpoints(const fs::path& run_dir, std::vector<double>& losses) {
  Trainer t;
  RunDir run(run_dir);
  RunCheckpoints ckpt(run, t.model, t.opt, t.gen);
  TrainingPosition at;
  for (int i = 0; i < 6; ++i) {
    losses.push_back(t.step());
    ++at.step;
    ++at.batch_in_epoch;
    if (at.step % 2 == 0) ckpt.save(at);
  }
  for (int i = 0; i < 4; ++i) losses.push_back(t.step());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(run_checkpoints)

BOOST_AUTO_TEST_CASE(restore_continues_bit_for_bit) {
  TempDir tmp;
  Trainer reference;
  std::vector<double> expected;
  for (int i = 0; i < 10; ++i) expected.push_back(reference.step());

  {
    Trainer first;
    RunDir run(tmp.path() / "run");
    RunCheckpoints ckpt(run, first.model, first.opt, first.gen, {.metric = "loss", .higher_is_better = false});
    TrainingPosition at;
    for (int i = 0; i < 6; ++i) {
      BOOST_TEST(first.step() == expected[i]);
      ++at.step;
      ++at.batch_in_epoch;
      if (at.step % 2 == 0) ckpt.save(at);
    }
    at.extra = nlohmann::json::object({{"window", 1.5}});
    ckpt.save(at);  // again at step 6: the same folder
  }  // the first process ends (and releases the run folder's lock)

  Trainer second;  // a fresh process: other weights, a fresh generator
  RunDir reopened(tmp.path() / "run", ExistingRun::Append);
  RunCheckpoints restored(reopened, second.model, second.opt, second.gen);
  const TrainingPosition back = restored.restore_latest();
  BOOST_TEST(back.step == 6);
  BOOST_TEST(back.batch_in_epoch == 6);
  BOOST_TEST(back.extra["window"].get<double>() == 1.5);
  for (int i = 6; i < 10; ++i) BOOST_TEST(second.step() == expected[i], "step " << i + 1);
}

BOOST_AUTO_TEST_CASE(latest_and_best_pointers_and_pruning) {
  TempDir tmp;
  Trainer t;
  RunDir run(tmp.path() / "run");
  RunCheckpoints ckpt(run, t.model, t.opt, t.gen, {.metric = "accuracy", .higher_is_better = true});
  const fs::path dir = run.path() / "checkpoints";
  BOOST_TEST(ckpt.latest_path().empty());
  TrainingPosition at;
  const std::vector<double> accuracy{0.5, 0.8, 0.7, std::numeric_limits<double>::quiet_NaN(), 0.6};
  for (size_t i = 0; i < accuracy.size(); ++i) {
    t.step();
    at.step = static_cast<int64_t>(i + 1);
    ckpt.save(at);
    ckpt.offer_best(at, accuracy[i]);
  }
  BOOST_TEST(ckpt.latest_path() == dir / "step-000000005");
  BOOST_TEST(ckpt.best_path() == dir / "step-000000002");
  BOOST_TEST(*ckpt.best_value() == 0.8);
  // latest (5), the previous one (4) and best (2).
  BOOST_TEST(step_folders(dir) == std::vector<std::string>({"step-000000002", "step-000000004", "step-000000005"}));
  // A best found between checkpoints is saved on its own.
  at.step = 6;
  t.step();
  BOOST_TEST(ckpt.offer_best(at, 0.9));
  BOOST_TEST(step_folders(dir) == std::vector<std::string>({"step-000000004", "step-000000005", "step-000000006"}));
  // A restore brings back the best as it stood at the latest checkpoint (step 5: 0.8).
  Trainer other;
  RunCheckpoints restored(run, other.model, other.opt, other.gen, {.metric = "accuracy", .higher_is_better = true});
  restored.restore_latest();
  BOOST_TEST(*restored.best_value() == 0.8);
  BOOST_TEST(!restored.offer_best(at, 0.75));
  BOOST_TEST(restored.offer_best(at, 0.85));
}

BOOST_AUTO_TEST_CASE(missing_or_corrupt_checkpoints_are_named) {
  TempDir tmp;
  Trainer t;
  RunDir run(tmp.path() / "run");
  RunCheckpoints ckpt(run, t.model, t.opt, t.gen);
  check_error([&] { ckpt.restore_latest(); }, {"cannot resume", "checkpoints"});
  std::ofstream(run.path() / "checkpoints" / "latest") << "../../etc\n";
  check_error([&] { ckpt.restore_latest(); }, {"latest", "corrupt"});
  std::ofstream(run.path() / "checkpoints" / "latest") << "step-000000007\n";
  check_error([&] { ckpt.restore_latest(); }, {"step-000000007"});
}

// Issue 23 item 10: a NUL byte in `latest` cut the error line at the NUL; the content is shown
// escaped, whole.
BOOST_AUTO_TEST_CASE(a_corrupt_pointer_is_shown_escaped_whole) {
  TempDir tmp;
  Trainer t;
  RunDir run(tmp.path() / "run");
  RunCheckpoints ckpt(run, t.model, t.opt, t.gen);
  std::ofstream(run.path() / "checkpoints" / "latest", std::ios::binary) << std::string("step-0\0/../../x\n", 16);
  check_error([&] { ckpt.restore_latest(); }, {"latest", "corrupt", "\"step-0\\x00/../../x\"", "not the name of a step folder"});
}

// Issue 23 item 6: eval, sample and figures followed a `latest` or `best` that leads out of the run
// (and used another run's checkpoint); they all read pointers with run_checkpoint_folder().
BOOST_AUTO_TEST_CASE(the_pointer_reader_refuses_anything_but_a_step_folder_of_the_run) {
  TempDir tmp;
  const fs::path a = tmp.path() / "a", b = tmp.path() / "b";
  fs::create_directories(a / "checkpoints" / "step-000000004");
  fs::create_directories(b / "checkpoints" / "step-000000008");
  std::ofstream(a / "checkpoints" / "best") << "step-000000004\n";
  BOOST_TEST(run_checkpoint_folder(a, "best") == a / "checkpoints" / "step-000000004");
  check_error([&] { run_checkpoint_folder(a, "latest"); }, {"has no 'latest' checkpoint", (a / "checkpoints" / "latest").string()});
  for (const std::string& escape : std::vector<std::string>{"../../b/checkpoints/step-000000008", (b / "checkpoints" / "step-000000008").string(),
                                    "step-000000004/../../../b/checkpoints/step-000000008", "..", ""}) {
    std::ofstream(a / "checkpoints" / "latest") << escape << "\n";
    check_error([&] { run_checkpoint_folder(a, "latest"); }, {"corrupt", "not the name of a step folder of this run"});
  }
  // A step name the run does not hold, or a link in its place, is refused too.
  std::ofstream(a / "checkpoints" / "latest") << "step-000000008\n";
  check_error([&] { run_checkpoint_folder(a, "latest"); }, {"names 'step-000000008'", "not a step folder of this run"});
  fs::create_directory_symlink(b / "checkpoints" / "step-000000008", a / "checkpoints" / "step-000000008");
  check_error([&] { run_checkpoint_folder(a, "latest"); }, {"names 'step-000000008'", "not a step folder of this run"});
}

BOOST_AUTO_TEST_CASE(restore_falls_back_to_the_previous_checkpoint_and_says_why) {
  // Each way `latest` can fail, and what restore must pick instead (folders 2, 4, 6 are kept:
  // 6 is latest, 4 the previous one, 2 was pruned).
  struct Damage {
    std::string what;
    std::function<void(const fs::path&)> apply;  // on checkpoints/
    int64_t expected_step;
    std::vector<std::string> said;  // on stderr
  };
  auto flip = [](const fs::path& file) {
    std::string bytes = read_text(file);
    bytes[bytes.size() * 3 / 4] ^= 0x04;
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  };
  const std::vector<Damage> damages{
      {"a bit flip in the model's data", [&](const fs::path& d) { flip(d / "step-000000006" / "model.safetensors"); }, 4,
       {"step-000000006/model.safetensors", "is corrupt: its CRC-32", "restored", "step-000000004"}},
      {"a truncated optimizer file",
       [](const fs::path& d) { fs::resize_file(d / "step-000000006" / "optimizer.safetensors", 100); }, 4,
       {"step-000000006/optimizer.safetensors", "is 100 bytes", "truncated"}},
      {"a missing state.json", [](const fs::path& d) { fs::remove(d / "step-000000006" / "state.json"); }, 4,
       {"step-000000006/state.json", "No such file"}},
      {"latest names a folder that is gone", [](const fs::path& d) { fs::remove_all(d / "step-000000006"); }, 4,
       {"step-000000006/state.json"}},
      {"a corrupt pointer", [](const fs::path& d) { std::ofstream(d / "latest") << "garbage\n"; }, 6,
       {"latest' is corrupt", "\"garbage\""}},
      {"no pointer at all", [](const fs::path& d) { fs::remove(d / "latest"); }, 6, {"no 'latest' file"}},
  };
  for (const Damage& damage : damages) {
    BOOST_TEST_CONTEXT(damage.what) {
      TempDir tmp;
      std::vector<double> losses;
      three_checkpoints(tmp.path() / "run", losses);
      const fs::path dir = tmp.path() / "run" / "checkpoints";
      BOOST_TEST(step_folders(dir) == std::vector<std::string>({"step-000000004", "step-000000006"}));
      damage.apply(dir);

      Trainer second;
      RunDir reopened(tmp.path() / "run", ExistingRun::Append);
      RunCheckpoints restored(reopened, second.model, second.opt, second.gen);
      TrainingPosition at;
      const std::string said = stderr_of([&] { at = restored.restore_latest(); }, tmp.path() / "stderr.txt");
      BOOST_TEST_MESSAGE(said);
      BOOST_TEST(at.step == damage.expected_step);
      for (const std::string& part : damage.said) BOOST_TEST(said.find(part) != std::string::npos, part << " not in: " << said);
      // latest now names what was restored, and the run continues bit for bit from there.
      BOOST_TEST(restored.latest_path() == dir / step_folder_name(damage.expected_step));
      for (size_t i = static_cast<size_t>(at.step); i < losses.size(); ++i) BOOST_TEST(second.step() == losses[i], "step " << i + 1);
    }
  }
}

BOOST_AUTO_TEST_CASE(restore_throws_listing_every_folder_when_none_loads) {
  TempDir tmp;
  std::vector<double> losses;
  three_checkpoints(tmp.path() / "run", losses);
  const fs::path dir = tmp.path() / "run" / "checkpoints";
  fs::resize_file(dir / "step-000000006" / "model.safetensors", 10);
  fs::remove(dir / "step-000000004" / "state.json");
  Trainer second;
  RunCheckpoints restored(RunDir(tmp.path() / "run", ExistingRun::Append), second.model, second.opt, second.gen);
  std::string said;
  check_error([&] { said = stderr_of([&] { restored.restore_latest(); }, tmp.path() / "stderr.txt"); },
              {"cannot resume: no checkpoint in", "tried:", "step-000000006/model.safetensors' is corrupt",
               "step-000000004/state.json"});
  said = read_text(tmp.path() / "stderr.txt");
  BOOST_TEST(said.find("step-000000006") != std::string::npos, said);
  BOOST_TEST(said.find("step-000000004") != std::string::npos, said);
  // A checkpoint of another model does not fit: that is a failure to load too.
  TempDir other;
  three_checkpoints(other.path() / "run", losses);
  Generator gen(1);
  Linear wider(5, 2, gen);
  Adam opt(wider.parameters());
  RunCheckpoints mismatched(RunDir(other.path() / "run", ExistingRun::Append), wider, opt, gen);
  check_error([&] { stderr_of([&] { mismatched.restore_latest(); }, other.path() / "stderr.txt"); },
              {"does not fit this run", "step-000000006", "step-000000004"});
}

BOOST_AUTO_TEST_CASE(after_a_restore_the_next_newest_folder_stays_the_fallback) {
  TempDir tmp;
  std::vector<double> losses;
  three_checkpoints(tmp.path() / "run", losses);
  const fs::path dir = tmp.path() / "run" / "checkpoints";
  Trainer second;
  RunDir reopened(tmp.path() / "run", ExistingRun::Append);
  RunCheckpoints ckpt(reopened, second.model, second.opt, second.gen, {.metric = "m", .higher_is_better = true});
  TrainingPosition at = ckpt.restore_latest();
  BOOST_TEST(at.step == 6);
  // A best-only folder prunes: latest (6), best (7) and the fallback (4) stay.
  second.step();
  at.step = 7;
  BOOST_TEST(ckpt.offer_best(at, 1.0));
  BOOST_TEST(step_folders(dir) == std::vector<std::string>({"step-000000004", "step-000000006", "step-000000007"}));
  // Saving step 7 again swaps the folder in place: `best` never names a missing folder, and
  // the new contents are there.
  at.extra = nlohmann::json::object({{"again", true}});
  ckpt.save(at);
  BOOST_TEST(step_folders(dir) == std::vector<std::string>({"step-000000006", "step-000000007"}));
  BOOST_TEST(ckpt.best_path() == dir / "step-000000007");
  BOOST_TEST(load_checkpoint(dir / "step-000000007").extra_json.find("again") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_failed_save_leaves_latest_and_its_folder_alone) {
  // A file-size limit makes write() fail with EFBIG part way through the model file, as a full
  // disk would (the limit binds root too; SIGXFSZ ignored so write() returns the error).
  TempDir tmp;
  std::vector<double> losses;
  three_checkpoints(tmp.path() / "run", losses);
  const fs::path dir = tmp.path() / "run" / "checkpoints";
  Trainer t;
  RunDir run(tmp.path() / "run", ExistingRun::Append);
  RunCheckpoints ckpt(run, t.model, t.opt, t.gen);
  TrainingPosition at = ckpt.restore_latest();
  t.step();
  t.step();
  at.step = 8;
  rlimit old_limit{};
  BOOST_REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old_limit;
  small.rlim_cur = 64;  // the model file of Linear(4, 2) is ~200 bytes
  BOOST_REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::string error;
  try {
    ckpt.save(at);
  } catch (const Error& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  BOOST_TEST_MESSAGE(error);
  BOOST_TEST(error.find("cannot save the checkpoint of step 8") != std::string::npos, error);
  BOOST_TEST(error.find("step-000000008.partial/model.safetensors") != std::string::npos, error);
  BOOST_TEST(error.find("File too large") != std::string::npos, error);
  BOOST_TEST(ckpt.latest_path() == dir / "step-000000006");
  BOOST_TEST(step_folders(dir) == std::vector<std::string>({"step-000000004", "step-000000006"}));
  BOOST_TEST(fs::exists(dir / "latest"));
  Trainer third;
  RunCheckpoints again(run, third.model, third.opt, third.gen);
  BOOST_TEST(again.restore_latest().step == 6);
  // With room again, the same save succeeds.
  ckpt.save(at);
  BOOST_TEST(ckpt.latest_path() == dir / "step-000000008");
}

BOOST_AUTO_TEST_CASE(finite_guard_names_the_step_and_the_parameter) {
  Generator gen(1);
  Sequential model;
  model.add(std::make_shared<Linear>(3, 3, gen));
  model.add(std::make_shared<Linear>(3, 1, gen));
  check_error([] { check_finite_loss(NAN, 17, "runs/x/checkpoints/step-000000010"); },
              {"loss is nan", "step 17", "step-000000010"});
  check_error([] { check_finite_loss(INFINITY, 3, {}); }, {"inf", "no checkpoint was written yet"});
  BOOST_CHECK_NO_THROW(check_finite_loss(0.5, 1, {}));

  Variable loss = sum(model.forward(normal({2, 3}, 0, 1, gen)));
  loss.backward();
  BOOST_CHECK_NO_THROW(check_finite_gradients(model, 5, {}));
  auto named = model.named_parameters();
  Tensor g = named[2].second.grad().clone();  // the second layer's weight
  g.fill_(NAN);
  Variable second_weight = named[2].second;  // shares the parameter
  second_weight.set_grad(g);
  check_error([&] { check_finite_gradients(model, 5, {}); }, {"step 5", "gradient of " + named[2].first});
  Variable first_weight = named[0].second;
  first_weight.mutable_value().fill_(INFINITY);
  check_error([&] { check_finite_gradients(model, 6, {}); }, {"value of " + named[0].first});
}

BOOST_AUTO_TEST_SUITE_END()
