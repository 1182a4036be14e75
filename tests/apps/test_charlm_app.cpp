// End-to-end tests of the charlm app (apps/charlm): runs the built executable with a tiny model on
// a small text and checks what it wrote (summary, metrics with spans and the attention share,
// figures, vocab.json), the eval and sample jobs, that sampling is deterministic per seed, that
// --resume from a checkpoint repeats the uninterrupted run exactly, and that bad input (an empty
// or one-character file, a segment longer than the data, an unknown character) is a clear error.
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include "tests/apps/app_process.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::read_text;
using posgrad::test::TempDir;

namespace {
const fs::path kApp = fs::path(POSGRAD_BIN_DIR) / "charlm";

int run(const std::string& args, const fs::path& log) {
  return posgrad::test::run_app(kApp, args, log, "OMP_NUM_THREADS=1 ");
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A few thousand characters of text with structure (repeated lines) and 20-odd symbols.
std::string sample_text() {
  const char* lines[] = {"the quick brown fox jumps over the lazy dog\n", "a stitch in time saves nine\n",
                         "to be or not to be, that is the question\n", "all that glitters is not gold\n"};
  std::string text;
  for (int i = 0; i < 60; ++i) text += lines[(i * 7 + i / 3) % 4];
  return text;
}

std::string tiny(const fs::path& data) {
  return "-Ddata.path=" + data.string() +
         " -Dmodel.layers=2 -Dmodel.width=16 -Dmodel.heads=2 -Dmodel.ff_width=32 -Dmodel.max_span=32 "
         "-Dmodel.span_ramp=8 -Dmodel.trim_granularity=8 -Dmodel.cache_margin=8 -Dmodel.span_loss=1e-4 "
         "-Dtrain.batch_size=4 -Dtrain.segment=16 -Dtrain.warmup=5 -Dtrain.log_every=2 -Dtrain.eval_every=4 "
         "-Dtrain.checkpoint_every=4 -Deval.batch=2 -Dmodel.dropout=0.1";
}

std::vector<nlohmann::json> metrics_without_time(const fs::path& run_dir) {
  return posgrad::test::metrics_without(run_dir, {"time_s", "train_seconds"});
}
}  // namespace

BOOST_AUTO_TEST_SUITE(charlm_app)

BOOST_AUTO_TEST_CASE(trains_evaluates_and_samples) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", out = tmp.path() / "run";
  write_file(data, sample_text());
  const int rc = run("train " + tiny(data) + " -Dtrain.steps=12 --out " + out.string(), tmp.path() / "log.txt");
  BOOST_REQUIRE_MESSAGE(rc == 0, "charlm failed:\n" << read_text(tmp.path() / "log.txt"));
  const auto summary = nlohmann::json::parse(read_text(out / "summary.json"));
  const double val = summary.at("val_loss");
  BOOST_TEST_MESSAGE("charlm tiny run: val_loss " << val << ", span_avg " << summary.at("span_avg"));
  BOOST_TEST(std::isfinite(val));
  BOOST_TEST(val < std::log(24.0));  // better than uniform over the text's symbols
  BOOST_TEST(summary.at("steps") == 12);
  BOOST_TEST(summary.at("steps_planned") == 12);
  BOOST_TEST(summary.at("train_tokens") == 12 * 4 * 16);  // steps x train.batch_size x train.segment of tiny()
  for (const char* f : {"span_mask.png", "spans.png", "learning_curves.png"}) BOOST_TEST(fs::exists(out / "figures" / f), f);
  BOOST_TEST(fs::exists(out / "vocab.json"));
  fs::remove(out / "vocab.json");  // eval and sample read the vocabulary from the checkpoint
  const auto metrics = metrics_without_time(out);
  BOOST_REQUIRE(!metrics.empty());
  for (const char* key : {"loss", "bpc", "span_avg", "span_max", "attn_flops_share", "head_spans", "lr"})
    BOOST_TEST(metrics.back().contains(key), key);
  BOOST_TEST(metrics.back().at("span_avg").get<double>() >= 8.0);  // the ramp is counted, as the paper logs it
  BOOST_TEST(metrics.back().contains("val_loss"));

  BOOST_REQUIRE_EQUAL(run("eval " + out.string(), tmp.path() / "eval.txt"), 0);
  BOOST_TEST(read_text(tmp.path() / "eval.txt").find("bpc") != std::string::npos);

  const std::string sample = "sample --checkpoint " + out.string() + " --prompt 'to be' --tokens 60 --temperature 0.8 --top-k 5 ";
  BOOST_REQUIRE_EQUAL(run(sample + "--seed 1", tmp.path() / "s1.txt"), 0);
  BOOST_REQUIRE_EQUAL(run(sample + "--seed 1", tmp.path() / "s1b.txt"), 0);
  BOOST_REQUIRE_EQUAL(run(sample + "--seed 2", tmp.path() / "s2.txt"), 0);
  const std::string s1 = read_text(tmp.path() / "s1.txt"), s2 = read_text(tmp.path() / "s2.txt");
  BOOST_TEST(s1 == read_text(tmp.path() / "s1b.txt"));
  BOOST_TEST(s1 != s2);
  BOOST_TEST(s1.rfind("to be", 0) == 0);
  BOOST_TEST(s1.size() == std::string("to be").size() + 60 + 1);  // prompt, 60 characters, newline
  // The attention figure of the last generated characters.
  BOOST_REQUIRE_EQUAL(run(sample + "--seed 1 --figure " + (tmp.path() / "attention.png").string(), tmp.path() / "s3.txt"), 0);
  BOOST_TEST(fs::exists(tmp.path() / "attention.png"));
  BOOST_TEST(read_text(tmp.path() / "s3.txt").rfind(s1, 0) == 0);  // the same text, then the figure's path
}

// A run resumed from its step-4 checkpoint (the later one removed) logs exactly what the
// uninterrupted run logged: parameters, optimizer, generator, stream position and the cache.
BOOST_AUTO_TEST_CASE(resume_repeats_the_uninterrupted_run) {
  TempDir tmp;
  const fs::path data = tmp.path() / "text.txt", a = tmp.path() / "a", b = tmp.path() / "b";
  write_file(data, sample_text());
  BOOST_REQUIRE_EQUAL(run("train " + tiny(data) + " -Dtrain.steps=8 --out " + a.string(), tmp.path() / "a.txt"), 0);
  fs::copy(a, b, fs::copy_options::recursive);
  BOOST_REQUIRE(fs::exists(b / "checkpoints" / "step-000000004"));
  fs::remove_all(b / "checkpoints" / "step-000000008");
  write_file(b / "checkpoints" / "latest", "step-000000004\n");
  write_file(b / "checkpoints" / "best", "step-000000004\n");
  const int rc = run("train --resume " + b.string(), tmp.path() / "b.txt");
  BOOST_REQUIRE_MESSAGE(rc == 0, read_text(tmp.path() / "b.txt"));
  const auto ma = metrics_without_time(a), mb = metrics_without_time(b);
  BOOST_REQUIRE_EQUAL(ma.size(), mb.size());
  for (size_t i = 0; i < ma.size(); ++i) BOOST_TEST(ma[i].dump() == mb[i].dump(), "record " << i);
  const auto sa = nlohmann::json::parse(read_text(a / "summary.json")), sb = nlohmann::json::parse(read_text(b / "summary.json"));
  BOOST_TEST(sa.at("val_loss").get<double>() == sb.at("val_loss").get<double>());
}

BOOST_AUTO_TEST_CASE(bad_input_is_a_clear_error) {
  TempDir tmp;
  auto fails_with = [&](const std::string& args, const std::string& expected) {
    const fs::path log = tmp.path() / "log.txt";
    const int rc = run(args, log);
    const std::string text = read_text(log);
    BOOST_TEST(rc == 1, args << " -> " << rc << ":\n" << text);
    BOOST_TEST(text.find(expected) != std::string::npos, "expected '" << expected << "' in:\n" << text);
  };
  const fs::path empty = tmp.path() / "empty.txt", one = tmp.path() / "one.txt", data = tmp.path() / "text.txt";
  write_file(empty, "");
  write_file(one, "x");
  write_file(data, sample_text());
  fails_with("train " + tiny(empty) + " --out " + (tmp.path() / "r1").string(), "empty");
  fails_with("train " + tiny(one) + " --out " + (tmp.path() / "r2").string(), "training split has");
  fails_with("train " + tiny(data) + " -Dtrain.segment=5000 --out " + (tmp.path() / "r3").string(),
             "a segment of 5000 needs 5001 per row");
  // A validation character the training split never saw.
  write_file(tmp.path() / "novel.txt", sample_text() + std::string(100, 'Q'));
  fails_with("train " + tiny(tmp.path() / "novel.txt") + " --out " + (tmp.path() / "r4").string(), "character 'Q'");

  const fs::path out = tmp.path() / "run";
  BOOST_REQUIRE_EQUAL(run("train " + tiny(data) + " -Dtrain.steps=2 --out " + out.string(), tmp.path() / "ok.txt"), 0);
  fails_with("sample --checkpoint " + out.string() + " --prompt 'to be#' --tokens 5", "character '#' at offset 5");
  fails_with("sample --checkpoint " + out.string() + " --prompt '' --tokens 5", "prompt is empty");
  write_file(tmp.path() / "other.txt", "ZZZ");
  fails_with("eval " + out.string() + " --file " + (tmp.path() / "other.txt").string(), "character 'Z'");
}

// Without Tiny Shakespeare in the data folder the error names the command that fetches it there.
BOOST_AUTO_TEST_CASE(missing_corpus_names_the_fetch_command) {
  TempDir tmp;
  fs::create_directories(tmp.path() / "empty_data");
  const fs::path log = tmp.path() / "log.txt";
  const int rc = run("train -Ddata.data_dir=" + (tmp.path() / "empty_data").string() + " --out " +
                         (tmp.path() / "r").string(),
                     log);
  const std::string text = read_text(log);
  BOOST_TEST(rc == 1, text);
  BOOST_TEST(text.find((tmp.path() / "empty_data" / "tinyshakespeare" / "input.txt").string() + ": file not found") !=
                 std::string::npos,
             text);
  BOOST_TEST(text.find("posgrad-data fetch tinyshakespeare --dir " + (tmp.path() / "empty_data").string()) !=
                 std::string::npos,
             text);
}

BOOST_AUTO_TEST_SUITE_END()
