// End-to-end tests of the treetasks app through the built executable, on a tiny depth-first
// ROTATE (trees of depth about 3, 64 training examples, a 1 + 1 layer model of width 16) with a
// flattened baseline: a run writes the three test metrics to summary.json; eval scores the best
// checkpoint at the perplexity the run reported; decode prints a typed tree's output and whether
// it is the task's answer; every scheme preset trains a step (the tree ones on heap positions);
// tree APE trains, decodes and draws its branch angles; the figures job draws the learning curves
// and a cross-attention; bad input (a malformed
// tree, a tree deeper than the tree encoding allows, a label of the wrong kind, an unknown task or
// scheme) gets one clear line and nothing decoded or written.
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
namespace treetasks_app_tests {
namespace {

const fs::path kApp = fs::path(POSGRAD_BIN_DIR) / "treetasks";

int run(const std::string& args, const fs::path& log) { return posgrad::test::run_app(kApp, args, log, "OMP_NUM_THREADS=1 "); }

const std::string kTiny =
    "--config configs/treetasks/quick.yaml --config configs/treetasks/schemes/rope.yaml -Dtask=rotate -Dorder=depth "
    "-Ddata.depth_mean=3 -Ddata.train=64 -Ddata.dev=16 -Ddata.test=16 -Dmodel.width=16 -Dmodel.heads=2 "
    "-Dmodel.ff_width=32 -Dmodel.encoder_layers=1 -Dmodel.decoder_layers=1 -Dtrain.batch_size=16 -Dtrain.epochs=2 "
    "-Dtrain.warmup_epochs=1 -Dseed=3";

}  // namespace

BOOST_AUTO_TEST_SUITE(treetasks_app)

BOOST_AUTO_TEST_CASE(train_eval_decode) {
  TempDir tmp;
  const fs::path ref = tmp / "ref";
  BOOST_REQUIRE_MESSAGE(run("--out " + ref.string() + " " + kTiny, tmp / "ref.txt") == 0, read_text(tmp / "ref.txt"));
  BOOST_REQUIRE_EQUAL(posgrad::test::metrics_without(ref, {"time_s"}).size(), 2u);
  const auto summary = nlohmann::json::parse(read_text(ref / "summary.json"));
  BOOST_TEST(summary["test_ppl"].get<double>() >= 1.0);
  BOOST_TEST(summary["order"].get<std::string>() == "depth");
  BOOST_TEST(summary["tree_positions"].get<bool>() == false);

  BOOST_REQUIRE(run("eval " + ref.string(), tmp / "eval.txt") == 0);
  const auto e = nlohmann::json::parse(read_text(ref / "eval-test-best.json"));
  BOOST_TEST(std::abs(e["ppl"].get<double>() - summary["test_ppl"].get<double>()) < 1e-9);

  BOOST_REQUIRE_MESSAGE(run("decode " + ref.string() + " --input \"(11 (12 1 2) 3)\"", tmp / "dec.txt") == 0,
                        read_text(tmp / "dec.txt"));
  const std::string decoded = read_text(tmp / "dec.txt");
  BOOST_TEST(decoded.find("input    (11 (12 1 2) 3)\noutput   ") != std::string::npos, decoded);
  BOOST_TEST((decoded.find("correct  yes") != std::string::npos ||
              decoded.find("correct  no (expected (12 1 (11 2 3)))") != std::string::npos), decoded);

  // Bad trees: one clear line each, nothing decoded.
  const auto refused = [&](const std::string& tree, const std::string& expected) {
    std::ofstream(tmp / "tree.txt") << tree << "\n";
    BOOST_TEST(run("decode " + ref.string() + " --file " + (tmp / "tree.txt").string(), tmp / "bad.txt") != 0);
    const std::string out = read_text(tmp / "bad.txt");
    BOOST_TEST(out.find(expected) != std::string::npos, out);
    BOOST_TEST(out.find("output") == std::string::npos, out);
  };
  refused("(11 (12 1 2) 3", "line 1: ");  // the parser names the character position
  std::string deep = "1";
  for (int d = 0; d < 17; ++d) deep = "(11 " + deep + " 2)";
  refused(deep, "tree of depth 17 is deeper than");
  refused("(5 1 2)", "label 5 of a binary node is not an operator of rotate (11..20)");
  refused("(11 13 2)", "leaf label 13 is not a leaf of rotate (1..10)");
}

BOOST_AUTO_TEST_CASE(every_scheme_preset_trains_a_step) {
  TempDir tmp;
  for (const auto& entry : fs::directory_iterator(fs::path(POSGRAD_SOURCE_DIR) / "configs/treetasks/schemes")) {
    const std::string name = entry.path().stem().string();
    const std::string args = kTiny + " --config " + entry.path().string() + " -Dtrain.max_steps=1 --out " + (tmp / name).string();
    BOOST_TEST(run(args, tmp / (name + ".txt")) == 0, name << ": " << read_text(tmp / (name + ".txt")));
    // The tree schemes read heap positions, the others the flattened sequence.
    const bool tree = name.rfind("ape_tree", 0) == 0 || name.rfind("tree_sq", 0) == 0;
    const auto summary = nlohmann::json::parse(read_text(tmp / name / "summary.json"));
    BOOST_TEST(summary["tree_positions"].get<bool>() == tree, name);
  }
}

// Tree APE on heap positions: trains (the decoder causal in traversal order) and decodes a tree.
BOOST_AUTO_TEST_CASE(tree_ape_trains_and_decodes) {
  TempDir tmp;
  const fs::path out = tmp / "tree";
  BOOST_REQUIRE_MESSAGE(run(kTiny + " --config configs/treetasks/schemes/ape_tree.yaml --out " + out.string(), tmp / "t.txt") == 0,
                        read_text(tmp / "t.txt"));
  const auto summary = nlohmann::json::parse(read_text(out / "summary.json"));
  BOOST_TEST(summary["test_ppl"].get<double>() >= 1.0);
  BOOST_REQUIRE_MESSAGE(run("decode " + out.string() + " --input \"(11 (12 1 2) 3)\"", tmp / "dec.txt") == 0,
                        read_text(tmp / "dec.txt"));
  BOOST_TEST(read_text(tmp / "dec.txt").find("input    (11 (12 1 2) 3)\noutput   ") != std::string::npos, read_text(tmp / "dec.txt"));
  BOOST_REQUIRE_MESSAGE(run("figures " + out.string(), tmp / "fig.txt") == 0, read_text(tmp / "fig.txt"));
  BOOST_TEST(fs::file_size(out / "figures" / "ape_angles.png") > 1000u);
}

// figures: the learning curves and the cross-attention on a test example (one panel per decoder
// layer and head: 1 x 2 here, so wider than high), as PNG and SVG; RoPE has no APE generators,
// so no angles; an example outside the test split is one clear line and draws nothing.
BOOST_AUTO_TEST_CASE(figures_job_draws_curves_and_cross_attention) {
  TempDir tmp;
  const fs::path rope = tmp / "rope";
  BOOST_REQUIRE_MESSAGE(run("--out " + rope.string() + " " + kTiny, tmp / "rope.txt") == 0,
                        read_text(tmp / "rope.txt"));
  BOOST_TEST(run("figures " + rope.string() + " --example 16", tmp / "bad.txt") != 0);
  BOOST_TEST(read_text(tmp / "bad.txt").find("--example: 16 is not an example of the test split (0..15)") != std::string::npos,
             read_text(tmp / "bad.txt"));
  BOOST_TEST(!fs::exists(rope / "figures"));
  BOOST_REQUIRE_MESSAGE(run("figures " + rope.string() + " --example 2", tmp / "fig.txt") == 0, read_text(tmp / "fig.txt"));
  for (const char* f : {"curves.png", "curves.svg", "cross_attention.png", "cross_attention.svg"})
    BOOST_TEST(fs::file_size(rope / "figures" / f) > 1000u, f);
  const auto cross = posgrad::test::PngPixels::from_file(rope / "figures" / "cross_attention.png");
  BOOST_TEST(cross.width() > cross.height());
  BOOST_TEST(!fs::exists(rope / "figures" / "ape_angles.png"));
}

BOOST_AUTO_TEST_CASE(bad_input_one_clear_line) {
  TempDir tmp;
  BOOST_TEST(run(kTiny + " -Dtask=sort --out " + (tmp / "a").string(), tmp / "a.txt") != 0);
  BOOST_TEST(read_text(tmp / "a.txt").find("sort") != std::string::npos, read_text(tmp / "a.txt"));
  BOOST_TEST(!fs::exists(tmp / "a" / "config.yaml"));
  BOOST_TEST(run(kTiny + " -Dmodel.positional=nope --out " + (tmp / "b").string(), tmp / "b.txt") != 0);
  BOOST_TEST(read_text(tmp / "b.txt").find("model.positional: unknown scheme 'nope'") != std::string::npos);
  BOOST_TEST(!fs::exists(tmp / "b" / "config.yaml"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace treetasks_app_tests
