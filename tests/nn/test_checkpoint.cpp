// Checkpoints: a resumed run continues bit-identically (on the CPU, and on the GPU where one is
// usable), broken checkpoint directories are named errors, and truncated or bit-flipped files are
// caught by the checksums state.json records.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <unistd.h>
#include <zlib.h>

#include "autograd/functions.h"
#include "nn/adam.h"
#include "nn/checkpoint.h"
#include "tests/device_support.h"
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

  Device device;

  // The data and the parameters live on `device`; the generator (CPU Philox) draws on the host.
  explicit Run(uint64_t seed, Device on = kCPU) : gen(seed), device(on) {
    Generator data_gen(99);
    x = normal({16, 3}, 0, 1, data_gen);
    const Tensor w_true = Tensor::from_vector({1.5f, -2.0f, 0.5f}, {3, 1});
    y = (add_scalar(matmul(x, w_true), 0.3) + normal({16, 1}, 0, 0.1, data_gen)).to(device);
    x = x.to(device);
    w = Variable(Tensor::zeros({3, 1}).to(device), true);
    b = Variable(Tensor::zeros({1}).to(device), true);
    opt = std::make_unique<Adam>(std::vector<Variable>{w, b}, AdamOptions{.lr = 0.05, .amsgrad = true});
  }

  void train_step() {
    const int64_t start = static_cast<int64_t>(gen.next_uniform() * 4) * 4;
    const Tensor xb = x.narrow(0, start, 4) + normal({4, 3}, 0, 0.01, gen).to(device);
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

namespace {

// 10 steps straight against 5 steps, a checkpoint, and 5 more steps in fresh parameters and a
// fresh optimizer, all on `device` (the checkpoint's tensors are read to the CPU and back).
void check_resume_continues_bit_identically(Device device) {
  // 10 steps straight.
  Run straight(1234, device);
  for (int i = 0; i < 10; ++i) straight.train_step();

  // 5 steps, save, load into fresh parameters and a fresh optimizer, 5 more steps.
  TempDir dir;
  {
    Run first(1234, device);
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

  Run resumed(777, device);  // a different seed: everything must come from the checkpoint
  const Checkpoint loaded = load_checkpoint(dir.path() / "step_5");
  BOOST_TEST(loaded.step == 5);
  BOOST_TEST(loaded.extra_json == R"({"epoch":0,"batches_seen":5})");
  {
    NoGradGuard no_grad;
    for (const auto& [name, t] : loaded.model) (name == "w" ? resumed.w : resumed.b).mutable_value().copy_(t.to(device));
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

}  // namespace

BOOST_AUTO_TEST_SUITE(checkpoint)

BOOST_AUTO_TEST_CASE(resume_continues_bit_identically) { check_resume_continues_bit_identically(kCPU); }

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

  // Torn: model.safetensors from a later save than the rest. Its bytes differ from the ones
  // state.json recorded, so the checksum catches it first.
  save_checkpoint(dir.path() / "torn", ckpt);
  save_safetensors(dir.path() / "torn" / "model.safetensors", ckpt.model, {{"format", "posgrad-model"}, {"step", "6"}});
  expect_error(dir.path() / "torn", "model.safetensors' is corrupt: its CRC-32");

  // A missing file.
  save_checkpoint(dir.path() / "missing", ckpt);
  fs::remove(dir.path() / "missing" / "optimizer.safetensors");
  expect_error(dir.path() / "missing", "optimizer.safetensors");

  // state.json that is not JSON, or lacks a field.
  save_checkpoint(dir.path() / "badjson", ckpt);
  write_text(dir.path() / "badjson" / "state.json", "{ not json");
  expect_error(dir.path() / "badjson", "state.json' is corrupt: not valid JSON");
  write_text(dir.path() / "badjson" / "state.json", R"({"format": "posgrad-checkpoint", "version": 2})");
  expect_error(dir.path() / "badjson", "'crc32' is missing");
  // A version 1 checkpoint (before checksums) cannot be verified.
  write_text(dir.path() / "badjson" / "state.json", R"({"format": "posgrad-checkpoint", "version": 1, "step": 5})");
  expect_error(dir.path() / "badjson", "version 1 checkpoints carry no checksums");

  // A tensor file replaced by two bytes: its size gives it away.
  save_checkpoint(dir.path() / "corrupt", ckpt);
  write_text(dir.path() / "corrupt" / "model.safetensors", "xx");
  expect_error(dir.path() / "corrupt", "model.safetensors' is corrupt: it is 2 bytes");

  // No checkpoint there at all.
  expect_error(dir.path() / "nothing", "state.json");

  // extra_json must be a JSON object.
  ckpt.extra_json = "[1, 2]";
  BOOST_CHECK_THROW(save_checkpoint(dir.path() / "x", ckpt), Error);
  ckpt.extra_json = "{oops";
  BOOST_CHECK_THROW(save_checkpoint(dir.path() / "x", ckpt), Error);
}

namespace {

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A small checkpoint whose tensor files have data worth corrupting.
Checkpoint sample_checkpoint() {
  Generator gen(5);
  Variable w(normal({6, 5}, 0, 1, gen), true), b(normal({5}, 0, 1, gen), true);
  Adam opt({w, b});
  w.set_grad(Tensor::ones({6, 5}));
  b.set_grad(Tensor::ones({5}));
  opt.step();
  Checkpoint ckpt;
  ckpt.step = 1;
  ckpt.model = {{"w", w.value()}, {"b", b.value()}};
  ckpt.optimizer = opt.state();
  ckpt.rng_seed = 5;
  ckpt.rng_offset = 123456;
  ckpt.extra_json = R"({"epoch": 3, "note": "caf\u00e9", "loss": 0.1})";
  return ckpt;
}

}  // namespace

BOOST_AUTO_TEST_CASE(state_json_records_the_size_and_crc32_of_each_file_and_of_itself) {
  TempDir dir;
  save_checkpoint(dir.path(), sample_checkpoint());
  const auto state = nlohmann::ordered_json::parse(read_bytes(dir.path() / "state.json"));
  BOOST_TEST(state["version"] == 2);
  for (const char* name : {"model.safetensors", "optimizer.safetensors"}) {
    const std::string bytes = read_bytes(dir.path() / name);
    const uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size()));
    BOOST_TEST(state["files"][name]["bytes"].get<uint64_t>() == bytes.size(), name);
    BOOST_TEST(state["files"][name]["crc32"].get<std::string>() == fmt::format("{:08x}", crc), name);
  }
  // Its own checksum: of the compact text of the document without the "crc32" key.
  auto body = state;
  body.erase("crc32");
  const std::string text = body.dump();
  const uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size()));
  BOOST_TEST(state["crc32"].get<std::string>() == fmt::format("{:08x}", crc));
  BOOST_TEST(load_checkpoint(dir.path()).extra_json == R"({"epoch":3,"note":"café","loss":0.1})");
}

BOOST_AUTO_TEST_CASE(every_single_bit_flip_and_every_truncation_is_caught_naming_the_file) {
  // Flip one bit of every byte of each file (bit `offset % 8`), and cut each file at sampled
  // lengths: load_checkpoint must refuse each, naming the file.
  TempDir dir;
  const fs::path ckpt_dir = dir.path() / "c";
  save_checkpoint(ckpt_dir, sample_checkpoint());
  int flips = 0, truncations = 0;
  for (const char* name : {"model.safetensors", "optimizer.safetensors", "state.json"}) {
    const fs::path file = ckpt_dir / name;
    const std::string good = read_bytes(file);
    // Every byte of the tensor files (data included: safetensors validation alone cannot see a
    // flipped data bit); state.json every byte too.
    for (size_t at = 0; at < good.size(); ++at) {
      // In place (no truncation, which on ext4 flushes the file at close: slow).
      auto put = [&](char c) {
        std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(at));
        f.put(c);
      };
      put(static_cast<char>(good[at] ^ (1 << (at % 8))));
      try {
        load_checkpoint(ckpt_dir);
        BOOST_ERROR(name << ": a flip of bit " << at % 8 << " of byte " << at << " loaded");
      } catch (const Error& e) {
        if (std::string(e.what()).find(file.string()) == std::string::npos)
          BOOST_ERROR(name << " byte " << at << ": the error does not name the file: " << e.what());
      }
      put(good[at]);
      ++flips;
    }
    // state.json's checksum covers its JSON content, not its layout: cutting only its final
    // newline loses nothing and loads (checked below); one byte more is caught.
    const bool is_state = std::string(name) == "state.json";
    const size_t last_cut = is_state ? good.size() - 2 : good.size() - 1;
    for (size_t length : {size_t{0}, size_t{1}, size_t{8}, good.size() / 2, last_cut}) {
      write_text(file, good.substr(0, length));
      try {
        load_checkpoint(ckpt_dir);
        BOOST_ERROR(name << " cut to " << length << " bytes loaded");
      } catch (const Error& e) {
        BOOST_TEST(std::string(e.what()).find(file.string()) != std::string::npos, e.what());
        BOOST_TEST(std::string(e.what()).find("corrupt") != std::string::npos, e.what());
      }
      ++truncations;
    }
    if (is_state) {
      BOOST_REQUIRE(good.back() == '\n');
      write_text(file, good.substr(0, good.size() - 1));
      BOOST_CHECK_NO_THROW(load_checkpoint(ckpt_dir));
    }
    write_text(file, good);
    BOOST_CHECK_NO_THROW(load_checkpoint(ckpt_dir));
  }
  BOOST_TEST_MESSAGE(flips << " single-bit flips and " << truncations << " truncations refused");
  BOOST_TEST(flips > 1000);
}

BOOST_AUTO_TEST_CASE(the_step_cross_check_still_guards_files_with_valid_checksums) {
  // state.json rewritten by hand for another step, with its checksum recomputed: the checksum
  // passes, and the step recorded in the tensor files still disagrees.
  TempDir dir;
  save_checkpoint(dir.path(), sample_checkpoint());
  auto state = nlohmann::ordered_json::parse(read_bytes(dir.path() / "state.json"));
  state["step"] = 2;
  state.erase("crc32");
  const std::string text = state.dump();
  state["crc32"] = fmt::format("{:08x}", crc32(0L, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
  write_text(dir.path() / "state.json", state.dump(2));
  expect_error(dir.path(), "state.json is from step 2, model.safetensors from step 1");
}

// An app's own tensor files (Checkpoint::tensor_files, e.g. a language model's cache) come back
// as saved, are in state.json's checksum list, and a missing, truncated or mixed-in one is a
// named error, as for the model file.
BOOST_AUTO_TEST_CASE(tensor_files_are_checked_like_the_model) {
  TempDir dir;
  Checkpoint ckpt = sample_checkpoint();
  ckpt.tensor_files["cache"] = {{"layer.0", Tensor::from_vector({1.0f, 2.0f, 3.0f}, {1, 3})}};
  save_checkpoint(dir.path() / "ok", ckpt);
  const Checkpoint back = load_checkpoint(dir.path() / "ok");
  BOOST_REQUIRE_EQUAL(back.tensor_files.size(), 1u);
  BOOST_TEST(back.tensor_files.at("cache").at(0).second.to_vector<float>() == std::vector<float>({1, 2, 3}),
             boost::test_tools::per_element());
  const auto state = nlohmann::ordered_json::parse(read_bytes(dir.path() / "ok" / "state.json"));
  BOOST_TEST(state["files"].contains("cache.safetensors"));

  for (const std::string damage : {"missing", "truncated", "other step"}) {
    const fs::path d = dir.path() / damage;
    save_checkpoint(d, ckpt);
    const fs::path file = d / "cache.safetensors";
    if (damage == "missing") fs::remove(file);
    if (damage == "truncated") fs::resize_file(file, fs::file_size(file) - 1);
    if (damage == "other step") save_safetensors(file, ckpt.tensor_files.at("cache"), {{"step", "7"}});
    expect_error(d, "cache.safetensors");
  }
  ckpt.tensor_files["model"] = {};
  BOOST_CHECK_THROW(save_checkpoint(dir.path() / "clash", ckpt), Error);

  // A state.json (with a valid checksum) naming a file outside the step folder is refused.
  auto listed = nlohmann::ordered_json::parse(read_bytes(dir.path() / "ok" / "state.json"));
  listed["files"]["../cache.safetensors"] = listed["files"]["cache.safetensors"];
  listed.erase("crc32");
  const std::string text = listed.dump();
  listed["crc32"] = fmt::format("{:08x}", crc32(0L, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
  write_text(dir.path() / "ok" / "state.json", listed.dump(2));
  expect_error(dir.path() / "ok", "lists '../cache.safetensors', which is not a tensor file name");
}

BOOST_AUTO_TEST_SUITE_END()

// The same on the GPU: parameters and Adam's buffers saved from cuda:0 and loaded back to it.
BOOST_AUTO_TEST_SUITE(checkpoint_cuda, *boost::unit_test::precondition(posgrad::test::GpuPresent()))

BOOST_AUTO_TEST_CASE(resume_on_the_gpu_continues_bit_identically) {
  check_resume_continues_bit_identically(posgrad::test::kGPU);
}

BOOST_AUTO_TEST_SUITE_END()
