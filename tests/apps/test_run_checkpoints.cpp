// RunCheckpoints and the finite guard: latest and best pointers, pruning to at most two step
// folders, a restore that continues bit for bit (same losses as an uninterrupted run), a corrupt
// pointer named in the error, and NaN/Inf stops that name the step and the parameter.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include "apps/common/finite_guard.h"
#include "apps/common/run_checkpoints.h"
#include "apps/common/run_dir.h"
#include "nn/nn.h"
#include "posgrad.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace posgrad;
using namespace posgrad::apps;
using posgrad::test::check_error;
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

}  // namespace

BOOST_AUTO_TEST_SUITE(run_checkpoints)

BOOST_AUTO_TEST_CASE(restore_continues_bit_for_bit) {
  TempDir tmp;
  Trainer reference;
  std::vector<double> expected;
  for (int i = 0; i < 10; ++i) expected.push_back(reference.step());

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
  BOOST_TEST(step_folders(dir) == std::vector<std::string>({"step-000000002", "step-000000005"}));
  // A best found between checkpoints is saved on its own.
  at.step = 6;
  t.step();
  BOOST_TEST(ckpt.offer_best(at, 0.9));
  BOOST_TEST(step_folders(dir) == std::vector<std::string>({"step-000000005", "step-000000006"}));
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
