// Checkpoints: a resumed run continues bit-identically, and broken checkpoint directories are
// named errors.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "autograd/functions.h"
#include "nn/adam.h"
#include "nn/checkpoint.h"
#include "tests/test_support.h"

using namespace posgrad;
namespace fs = std::filesystem;
using posgrad::test::TempDir;

namespace {

// A tiny linear regression y = x w + b trained with Adam. Each step draws its mini-batch
// position and input noise from the generator, so the RNG state matters for an exact resume.
struct Run {
  Tensor x, y;
  Variable w, b;
  std::unique_ptr<Adam> opt;
  Generator gen;

  explicit Run(uint64_t seed) : gen(seed) {
    Generator data_gen(99);
    x = normal({16, 3}, 0, 1, data_gen);
    const Tensor w_true = Tensor::from_vector({1.5f, -2.0f, 0.5f}, {3, 1});
    y = add_scalar(matmul(x, w_true), 0.3) + normal({16, 1}, 0, 0.1, data_gen);
    w = Variable(Tensor::zeros({3, 1}), true);
    b = Variable(Tensor::zeros({1}), true);
    opt = std::make_unique<Adam>(std::vector<Variable>{w, b}, AdamOptions{.lr = 0.05, .amsgrad = true});
  }

  void train_step() {
    const int64_t start = static_cast<int64_t>(gen.next_uniform() * 4) * 4;
    const Tensor xb = x.narrow(0, start, 4) + normal({4, 3}, 0, 0.01, gen);
    const Tensor yb = y.narrow(0, start, 4);
    Variable loss = mean(square(sub(add(matmul(Variable(xb), w), b), Variable(yb))));
    opt->zero_grad();
    loss.backward();
    opt->step();
  }
};

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void expect_error(const fs::path& dir, const std::string& needle) {
  try {
    load_checkpoint(dir);
    BOOST_ERROR("load_checkpoint accepted a broken checkpoint (" << needle << ")");
  } catch (const Error& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos, e.what());
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(checkpoint)

BOOST_AUTO_TEST_CASE(resume_continues_bit_identically) {
  // 10 steps straight.
  Run straight(1234);
  for (int i = 0; i < 10; ++i) straight.train_step();

  // 5 steps, save, load into fresh parameters and a fresh optimizer, 5 more steps.
  TempDir dir;
  {
    Run first(1234);
    for (int i = 0; i < 5; ++i) first.train_step();
    Checkpoint ckpt;
    ckpt.step = 5;
    ckpt.model = {{"w", first.w.value()}, {"b", first.b.value()}};
    ckpt.optimizer = first.opt->state();
    ckpt.rng_seed = first.gen.seed();
    ckpt.rng_offset = first.gen.offset();
    ckpt.extra_json = R"({"epoch": 0, "batches_seen": 5})";
    save_checkpoint(dir.path() / "step_5", ckpt);
  }
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir.path() / "step_5")) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  BOOST_TEST(files == std::vector<std::string>({"model.safetensors", "optimizer.safetensors", "state.json"}));

  Run resumed(777);  // a different seed: everything must come from the checkpoint
  const Checkpoint loaded = load_checkpoint(dir.path() / "step_5");
  BOOST_TEST(loaded.step == 5);
  BOOST_TEST(loaded.extra_json == R"({"epoch":0,"batches_seen":5})");
  {
    NoGradGuard no_grad;
    for (const auto& [name, t] : loaded.model) (name == "w" ? resumed.w : resumed.b).mutable_value().copy_(t);
  }
  resumed.opt->load_state(loaded.optimizer);
  resumed.gen.set_state(loaded.rng_seed, loaded.rng_offset);
  for (int i = 0; i < 5; ++i) resumed.train_step();

  BOOST_TEST(max_abs_diff(straight.w.value(), resumed.w.value()) == 0.0);
  BOOST_TEST(max_abs_diff(straight.b.value(), resumed.b.value()) == 0.0);
  BOOST_TEST(resumed.opt->step_count(0) == 10);
  // And the run actually learned something (the test is not vacuous).
  BOOST_TEST(std::abs(straight.w.value().to_vector<float>()[0]) > 0.05f);
}

BOOST_AUTO_TEST_CASE(hyperparameters_round_trip_exactly) {
  TempDir dir;
  Variable p(Tensor::zeros({2}), true);
  Adam opt({p}, {.lr = 0.1 + 0.2, .beta2 = 1.0 - 1e-9, .eps = 1.0 / 3.0});
  Checkpoint ckpt;
  ckpt.optimizer = opt.state();
  ckpt.rng_seed = UINT64_MAX;
  ckpt.rng_offset = (uint64_t{1} << 60) + 1;
  save_checkpoint(dir.path(), ckpt);
  const Checkpoint back = load_checkpoint(dir.path());
  BOOST_TEST(back.optimizer.kind == "adam");
  BOOST_TEST(back.optimizer.hyper == ckpt.optimizer.hyper);
  BOOST_TEST(back.rng_seed == UINT64_MAX);
  BOOST_TEST(back.rng_offset == (uint64_t{1} << 60) + 1);
  BOOST_TEST(back.model.empty());
  BOOST_TEST(back.extra_json == "{}");
}

BOOST_AUTO_TEST_CASE(broken_checkpoints_are_named_errors) {
  TempDir dir;
  Variable p(Tensor::zeros({2}), true);
  Adam opt({p});
  p.set_grad(Tensor::ones({2}));
  opt.step();
  Checkpoint ckpt;
  ckpt.step = 5;
  ckpt.model = {{"p", p.value()}};
  ckpt.optimizer = opt.state();

  // Torn: model.safetensors from a later save than the rest.
  save_checkpoint(dir.path() / "torn", ckpt);
  save_safetensors(dir.path() / "torn" / "model.safetensors", ckpt.model, {{"format", "posgrad-model"}, {"step", "6"}});
  expect_error(dir.path() / "torn", "model.safetensors from step 6");

  // A missing file.
  save_checkpoint(dir.path() / "missing", ckpt);
  fs::remove(dir.path() / "missing" / "optimizer.safetensors");
  expect_error(dir.path() / "missing", "optimizer.safetensors");

  // state.json that is not JSON, or lacks a field.
  save_checkpoint(dir.path() / "badjson", ckpt);
  write_text(dir.path() / "badjson" / "state.json", "{ not json");
  expect_error(dir.path() / "badjson", "state.json");
  write_text(dir.path() / "badjson" / "state.json", R"({"format": "posgrad-checkpoint", "version": 1})");
  expect_error(dir.path() / "badjson", "'step' is missing");

  // A corrupt tensor file inside: the safetensors error names it.
  save_checkpoint(dir.path() / "corrupt", ckpt);
  write_text(dir.path() / "corrupt" / "model.safetensors", "xx");
  expect_error(dir.path() / "corrupt", "model.safetensors");

  // No checkpoint there at all.
  expect_error(dir.path() / "nothing", "state.json");

  // extra_json must be a JSON object.
  ckpt.extra_json = "[1, 2]";
  BOOST_CHECK_THROW(save_checkpoint(dir.path() / "x", ckpt), Error);
  ckpt.extra_json = "{oops";
  BOOST_CHECK_THROW(save_checkpoint(dir.path() / "x", ckpt), Error);
}

BOOST_AUTO_TEST_SUITE_END()
