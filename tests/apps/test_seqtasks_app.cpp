// End-to-end tests of the seqtasks app through the built executable, on a tiny REVERSE (words of
// about 6 tokens, 64 training examples, a 1 + 1 layer model of width 16): a run logs the dev loss
// per epoch and writes the three test metrics to summary.json; a run stopped after its first
// epoch and resumed logs what an uninterrupted run logs; eval scores the best checkpoint at the
// perplexity the run reported; decode prints a typed word's output and whether it is right; every
// scheme preset trains a step; figures draws the curves, APE's angles and the cross-attention;
// bad input (a token outside the vocabulary, a word that is not integers, an unknown task or
// scheme) gets one clear line and nothing written.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/apps/app_process.h"
#include "tests/apps/png_pixels.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using posgrad::test::read_text;
using posgrad::test::TempDir;

// The file's helpers and suites in a namespace of their own: in a unity batch (cmake/build_speed.cmake)
// other test files with helpers of the same names (kApp, kTiny, run, ...) come before or after it.
namespace seqtasks_app_tests {
namespace {

const fs::path kApp = fs::path(POSGRAD_BIN_DIR) / "seqtasks";

int run(const std::string& args, const fs::path& log) { return posgrad::test::run_app(kApp, args, log, "OMP_NUM_THREADS=1 "); }

// 64 training examples in batches of 16: 4 steps an epoch, 2 epochs, the dev loss after each.
const std::string kTiny =
    "--config configs/seqtasks/quick.yaml --config configs/seqtasks/schemes/ape.yaml -Dtask=reverse "
    "-Ddata.length_mean=6 -Ddata.length_stddev=1 -Ddata.train=64 -Ddata.dev=16 -Ddata.test=16 "
    "-Dmodel.width=16 -Dmodel.heads=2 -Dmodel.ff_width=32 -Dmodel.encoder_layers=1 -Dmodel.decoder_layers=1 "
    "-Dtrain.batch_size=16 -Dtrain.epochs=2 -Dtrain.warmup_epochs=1 -Dtrain.eval_every=1 -Dseed=3";

}  // namespace

BOOST_AUTO_TEST_SUITE(seqtasks_app)

BOOST_AUTO_TEST_CASE(train_resume_eval_decode) {
  TempDir tmp;
  const fs::path ref = tmp / "ref", part = tmp / "part";
  BOOST_REQUIRE_MESSAGE(run("--out " + ref.string() + " " + kTiny, tmp / "ref.txt") == 0, read_text(tmp / "ref.txt"));
  const auto metrics = posgrad::test::metrics_without(ref, {"time_s"});
  BOOST_REQUIRE_EQUAL(metrics.size(), 2u);
  for (const char* key : {"train_loss", "dev_loss", "dev_ppl", "lr", "epoch"}) BOOST_TEST(metrics[1].contains(key), key);
  const auto summary = nlohmann::json::parse(read_text(ref / "summary.json"));
  BOOST_TEST(summary["test_ppl"].get<double>() >= 1.0);
  BOOST_TEST(summary["test_ppl_released"].get<double>() <= summary["test_ppl"].get<double>());  // extra zero losses
  BOOST_TEST(summary["test_exact_match"].get<double>() >= 0.0);
  BOOST_TEST(summary["test_exact_match"].get<double>() <= 1.0);
  const int64_t best_epoch = summary["best_epoch"];
  BOOST_TEST(summary["best_dev_loss"].get<double>() == metrics[best_epoch - 1]["dev_loss"].get<double>());

  // Stopped after its first epoch (max_steps), then resumed without the limit: the same metrics.
  BOOST_REQUIRE(run("--out " + part.string() + " " + kTiny + " -Dtrain.max_steps=4", tmp / "p1.txt") == 0);
  std::string config = read_text(part / "config.yaml");
  const auto at = config.find("max_steps: 4");
  BOOST_REQUIRE(at != std::string::npos);
  config.replace(at, 12, "max_steps: 0");
  std::ofstream(part / "config.yaml") << config;
  BOOST_REQUIRE_MESSAGE(run("train --resume " + part.string(), tmp / "p2.txt") == 0, read_text(tmp / "p2.txt"));
  BOOST_TEST(posgrad::test::metrics_without(part, {"time_s"}) == metrics);

  // eval: the best checkpoint at the test perplexity the run reported.
  BOOST_REQUIRE(run("eval " + ref.string() + " --split test", tmp / "eval.txt") == 0);
  const auto e = nlohmann::json::parse(read_text(ref / "eval-test-best.json"));
  BOOST_TEST(std::abs(e["ppl"].get<double>() - summary["test_ppl"].get<double>()) < 1e-9);
  BOOST_TEST(e["exact_match"].get<double>() == summary["test_exact_match"].get<double>());

  // decode: a typed word and a file of words.
  BOOST_REQUIRE_MESSAGE(run("decode " + ref.string() + " --input \"3 5 7 11\"", tmp / "dec.txt") == 0, read_text(tmp / "dec.txt"));
  const std::string decoded = read_text(tmp / "dec.txt");
  BOOST_TEST(decoded.find("input    3 5 7 11\noutput   11 ") != std::string::npos, decoded);  // REVERSE is given the first token
  BOOST_TEST(decoded.find("correct  ") != std::string::npos, decoded);
  std::ofstream(tmp / "words.txt") << "# two words\n1 2 3\n\n4 4 5 6\n";
  BOOST_REQUIRE(run("decode " + ref.string() + " --file " + (tmp / "words.txt").string(), tmp / "file.txt") == 0);
  BOOST_TEST(read_text(tmp / "file.txt").find("of 2 correct") != std::string::npos, read_text(tmp / "file.txt"));

  // Bad words: one clear line, nothing decoded.
  BOOST_TEST(run("decode " + ref.string() + " --input \"3 25 7\"", tmp / "bad1.txt") != 0);
  const std::string bad1 = read_text(tmp / "bad1.txt");
  BOOST_TEST(bad1.find("token 25 at index 1 is outside 1..19") != std::string::npos, bad1);
  BOOST_TEST(bad1.find("output") == std::string::npos, bad1);
  BOOST_TEST(run("decode " + ref.string() + " --input \"3 x 7\"", tmp / "bad2.txt") != 0);
  BOOST_TEST(read_text(tmp / "bad2.txt").find("--input: 'x' is not an integer token") != std::string::npos,
             read_text(tmp / "bad2.txt"));
}

BOOST_AUTO_TEST_CASE(every_scheme_preset_trains_a_step) {
  TempDir tmp;
  for (const auto& entry : fs::directory_iterator(fs::path(POSGRAD_SOURCE_DIR) / "configs/seqtasks/schemes")) {
    const std::string name = entry.path().stem().string();
    const std::string args = kTiny + " --config " + entry.path().string() + " -Dtrain.max_steps=1 --out " + (tmp / name).string();
    BOOST_TEST(run(args, tmp / (name + ".txt")) == 0, name << ": " << read_text(tmp / (name + ".txt")));
  }
}

// figures: the learning curves, APE's angles and the cross-attention on a test example, as PNG
// and SVG; the cross-attention has one panel per decoder layer and head (1 x 2 here, so it is
// twice as wide as high); a scheme without generators gets no angles; an example outside the
// test split is one clear line and draws nothing.
BOOST_AUTO_TEST_CASE(figures_job_draws_curves_angles_and_cross_attention) {
  TempDir tmp;
  const fs::path ape = tmp / "ape", sinusoidal = tmp / "sinusoidal";
  BOOST_REQUIRE_MESSAGE(run("--out " + ape.string() + " " + kTiny, tmp / "ape.txt") == 0, read_text(tmp / "ape.txt"));
  BOOST_REQUIRE_MESSAGE(run("figures " + ape.string() + " --example 3", tmp / "fig.txt") == 0, read_text(tmp / "fig.txt"));
  for (const char* f : {"curves.png", "curves.svg", "ape_angles.png", "ape_angles.svg", "cross_attention.png",
                        "cross_attention.svg"})
    BOOST_TEST(fs::file_size(ape / "figures" / f) > 1000u, f);
  const auto cross = posgrad::test::PngPixels::from_file(ape / "figures" / "cross_attention.png");
  BOOST_TEST(cross.width() > cross.height());

  BOOST_REQUIRE(run("--out " + sinusoidal.string() + " " + kTiny + " -Dmodel.positional=sinusoidal -Dtrain.max_steps=2",
                    tmp / "sin.txt") == 0);
  BOOST_TEST(run("figures " + sinusoidal.string() + " --example 16", tmp / "bad.txt") != 0);
  BOOST_TEST(read_text(tmp / "bad.txt").find("--example: 16 is not an example of the test split (0..15)") != std::string::npos,
             read_text(tmp / "bad.txt"));
  BOOST_TEST(!fs::exists(sinusoidal / "figures"));
  BOOST_REQUIRE(run("figures " + sinusoidal.string(), tmp / "sin_fig.txt") == 0);
  BOOST_TEST(fs::exists(sinusoidal / "figures" / "cross_attention.png"));
  BOOST_TEST(fs::exists(sinusoidal / "figures" / "curves.png"));
  BOOST_TEST(!fs::exists(sinusoidal / "figures" / "ape_angles.png"));
}

BOOST_AUTO_TEST_CASE(bad_input_one_clear_line) {
  TempDir tmp;
  BOOST_TEST(run(kTiny + " -Dmodel.positional=nope --out " + (tmp / "a").string(), tmp / "a.txt") != 0);
  BOOST_TEST(read_text(tmp / "a.txt").find("model.positional: unknown scheme 'nope'") != std::string::npos,
             read_text(tmp / "a.txt"));
  BOOST_TEST(!fs::exists(tmp / "a" / "config.yaml"));  // nothing half-written
  BOOST_TEST(run(kTiny + " -Dtask=sort --out " + (tmp / "b").string(), tmp / "b.txt") != 0);
  BOOST_TEST(read_text(tmp / "b.txt").find("sort") != std::string::npos, read_text(tmp / "b.txt"));
  BOOST_TEST(!fs::exists(tmp / "b" / "config.yaml"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace seqtasks_app_tests
